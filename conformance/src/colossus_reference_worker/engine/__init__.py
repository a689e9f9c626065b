"""The run engine: state machine, idempotency, owner index, watches and limits."""
