"""The protocol's error object: an SDK exception mapped to a language-neutral kind."""

from __future__ import annotations

from typing import Any

import colossus_agent_client as colossus

# Most specific classes first: the first isinstance match wins.
_KINDS: list[tuple[type[BaseException], str]] = [
    (colossus.IncompatibleServerError, "compatibility"),
    (colossus.TrustError, "trust"),
    (colossus.CredentialError, "credential"),
    (colossus.SidecarError, "sidecar"),
    (colossus.WatchGapError, "watch_gap"),
    (colossus.ArtifactIntegrityError, "integrity"),
    (colossus.ProtocolViolationError, "protocol_violation"),
    (colossus.OutcomeUnknownError, "outcome_unknown"),
    (colossus.DeadlineExceededError, "timeout"),
    (colossus.WatchIdleTimeoutError, "timeout"),
    (colossus.TransportError, "transport"),
    (colossus.AuthenticationError, "authentication"),
    (colossus.PermissionDeniedError, "permission"),
    (colossus.NotFoundError, "not_found"),
    (colossus.IdempotencyConflictError, "idempotency_conflict"),
    (colossus.InvalidArgumentError, "invalid_argument"),
    (colossus.CapabilityMissingError, "capability_missing"),
    (colossus.FailedPreconditionError, "failed_precondition"),
    (colossus.ResourceExhaustedError, "resource_exhausted"),
    (colossus.DataLossError, "integrity"),
    (colossus.InternalServerError, "internal"),
]


def error_view(exc: BaseException) -> dict[str, Any]:
    """Maps an exception to the protocol's language-neutral error object."""
    kind = "other"
    for cls, name in _KINDS:
        if isinstance(exc, cls):
            kind = name
            break
    code = getattr(exc, "code", None)
    reason = getattr(exc, "reason", None)
    view = {
        "kind": kind,
        "grpc_code": code.name if code is not None and hasattr(code, "name") else None,
        "reason": reason if isinstance(reason, str) else None,
        "sdk_type": type(exc).__name__,
        # str() of SDK errors is designed to be safe to show; the runner also
        # checks that no bearer ever appears here.
        "message": str(exc)[:2000],
    }
    delay = getattr(exc, "retry_delay", None)
    if isinstance(exc, colossus.ResourceExhaustedError) and delay is not None:
        view["retry_delay_seconds"] = float(delay)
    return view


def step_error(exc: BaseException) -> dict[str, Any]:
    """The protocol error of a failed step (client-side argument problems are `unsupported`)."""
    view = error_view(exc)
    if isinstance(exc, KeyError) and not isinstance(exc, colossus.ColossusError):
        view["kind"] = "unsupported"
    return view
