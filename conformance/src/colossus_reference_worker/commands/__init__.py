"""The subcommands of ``colossus-reference-worker``, one module per command group."""
