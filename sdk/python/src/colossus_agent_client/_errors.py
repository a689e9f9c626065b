"""The one error hierarchy of the SDK.

Every exception the SDK raises on purpose derives from :class:`ColossusError`. Errors that
come from the worker carry the gRPC code, the ``ErrorInfo`` reason (without the
``ERROR_REASON_`` prefix) and its metadata; errors raised locally carry ``code=None``.
Nothing here ever formats a bearer: messages are built only from codes, reasons, metadata
keys the contract declares non-secret, and the server's human-readable text. A failed
call becomes one of these in one place, ``_status.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import grpc

from ._reasons import ErrorReason, LocalReason

_EMPTY: Mapping[str, str] = MappingProxyType({})


class ColossusError(Exception):
    """Root of every error the SDK raises; catch it to handle them all.

    The SDK builds these itself; the constructor arguments are the attributes below.

    Attributes:
        message: human-readable text; never branch on it.
        code: the gRPC status code, or ``None`` when the SDK refused locally.
        reason: the ``ErrorInfo`` reason, or a local reason token, or ``None``.
        metadata: ``ErrorInfo`` metadata (``field``, ``limit``, ``scope``, ``capability``).
        idempotency_key: the key of the ``CreateRun`` call that failed, when there was one.
    """

    # The reason a class stands for when the SDK raises it without naming one (trust
    # failures and the like, which only the SDK detects); None for errors the worker sends.
    default_reason: ClassVar[str | None] = None

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode | None = None,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        if reason is None:
            reason = self.default_reason
        # Stored as a plain str, so an enum member prints and serialises as its name.
        self.reason = str(reason) if reason is not None else None
        self.metadata: Mapping[str, str] = MappingProxyType(dict(metadata)) if metadata else _EMPTY
        self.idempotency_key = idempotency_key

    @property
    def retryable(self) -> bool:
        """Whether sending the same request again may succeed and repeats no effect.

        True for a read that failed with ``UNAVAILABLE`` (a :class:`TransportError`), and
        for a create refused under the worker's create rate limit (``CREATE_RATE_LIMIT``:
        nothing was created, so the same call with the same idempotency key is safe after
        ``retry_delay``). The same rule as Go's ``Error.Retryable`` and Rust's
        ``Error::is_retryable``; the SDK itself retries only the first, never a mutation.
        """
        if self.code is grpc.StatusCode.UNAVAILABLE and isinstance(self, TransportError):
            return True
        return (
            self.code is grpc.StatusCode.RESOURCE_EXHAUSTED
            and self.reason == ErrorReason.CREATE_RATE_LIMIT.value
        )

    def __str__(self) -> str:
        parts = [self.message]
        if self.code is not None:
            parts.append(f"code={self.code.name}")
        if self.reason:
            parts.append(f"reason={self.reason}")
        if self.metadata:
            parts.append(
                "metadata=" + ",".join(f"{k}={v}" for k, v in sorted(self.metadata.items()))
            )
        if self.idempotency_key is not None:
            parts.append(f"idempotency_key={self.idempotency_key}")
        return " ".join(parts[:1]) + (f" ({'; '.join(parts[1:])})" if len(parts) > 1 else "")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


# --- connection and trust -------------------------------------------------------------


class TrustError(ColossusError):
    """The worker could not be shown to be the one this client was provisioned for.

    Raised while connecting, before the bearer is sent (except
    :class:`IncompatibleServerError`, which follows the first authenticated call). Never
    retried: fix the configuration or the worker, then connect again.
    """


class DescriptorError(TrustError):
    """``endpoint.json`` (or a sidecar bootstrap reply) is missing, unsafe or malformed:
    for example a loose file mode, a symbolic link, a non-loopback endpoint or an
    unknown field."""

    default_reason = LocalReason.DESCRIPTOR_INVALID


class CertificateError(TrustError):
    """``certificate.pem`` is missing, unsafe or not the single P-256 leaf for the
    loopback address the worker must present."""

    default_reason = LocalReason.CERTIFICATE_INVALID


class PinMismatchError(TrustError):
    """A certificate or instance ID disagreed with the identity enrolment printed. Where
    both are known, the message and ``metadata`` (``expected``, ``actual``) show them."""

    default_reason = LocalReason.PIN_MISMATCH


class TlsPolicyError(TrustError):
    """The live handshake did not meet the TLS policy: TLS 1.3 only, exactly one leaf."""

    default_reason = LocalReason.TLS_HANDSHAKE


class IncompatibleServerError(TrustError):
    """``GetServerInfo`` named another instance, API package, major version or placement
    than this client expects."""

    default_reason = LocalReason.SERVER_INFO_MISMATCH


class CredentialError(ColossusError):
    """The credential provider failed or returned a malformed bearer. The message never
    contains the bearer or the provider's own error text."""


# --- errors reported by the worker ------------------------------------------------------


class ApiError(ColossusError):
    """The worker refused the call with a definite status; ``code``, ``reason`` and
    ``metadata`` say why. A refused mutation had no effect."""


class AuthenticationError(ApiError):
    """``UNAUTHENTICATED``: the bearer is missing, unknown, not active or revoked."""


class PermissionDeniedError(ApiError):
    """``PERMISSION_DENIED``: a scope or role is not in the application's grant."""


class NotFoundError(ApiError):
    """``NOT_FOUND``: the run, interaction or artifact is not visible to this application."""


class InvalidArgumentError(ApiError):
    """``INVALID_ARGUMENT``, or a request the SDK refused locally before sending it."""


class IdempotencyConflictError(ApiError):
    """``ALREADY_EXISTS``/``IDEMPOTENCY_CONFLICT``: the key was used for another request."""


class FailedPreconditionError(ApiError):
    """``FAILED_PRECONDITION``: the run or interaction is not in a state that allows this."""


class CapabilityMissingError(FailedPreconditionError):
    """The worker does not advertise a capability the call needs.

    Raised locally before sending, or mapped from ``CAPABILITY_NOT_SUPPORTED``. The
    capability is in ``metadata["capability"]``.
    """


class ResourceExhaustedError(ApiError):
    """``RESOURCE_EXHAUSTED`` (a rate, concurrency or size limit; ``reason`` says which),
    or a size cap enforced locally: a request over the worker's advertised request cap
    (``REQUEST_TOO_LARGE``) or a response over the accepted response cap
    (``RESPONSE_TOO_LARGE``), both with ``code`` ``None``.

    Attributes:
        retry_delay: seconds the worker asked the caller to wait before trying again
            (its ``google.rpc.RetryInfo``, sent with ``CREATE_RATE_LIMIT``), or ``None``.
    """

    retry_delay: float | None = None


class DataLossError(ApiError):
    """``DATA_LOSS``: the worker's journal failed its integrity check."""


class InternalServerError(ApiError):
    """``INTERNAL`` or another server-side fault without a more specific meaning."""


# --- transport, watch and protocol ------------------------------------------------------


class TransportError(ColossusError):
    """The call did not reach a definite answer: connection lost, unavailable, timed out."""


class DeadlineExceededError(TransportError):
    """The per-call timeout expired."""


class WatchIdleTimeoutError(TransportError):
    """A watch delivered no event for longer than its ``idle_timeout``."""

    default_reason = LocalReason.WATCH_IDLE_TIMEOUT


class OutcomeUnknownError(ColossusError):
    """A mutation failed in a way that leaves its effect unknown.

    The SDK never repeats it. For ``runs.create`` repeat the call with the same
    ``idempotency_key`` (available on this error) to learn the outcome safely.
    """


class ProtocolViolationError(ColossusError):
    """The worker broke the contract (altered replay, bad stream order, wrong digest...)."""


class WatchGapError(ProtocolViolationError):
    """A watch received a sequence beyond ``last_sequence + 1``: events were lost."""

    default_reason = LocalReason.WATCH_GAP


class ArtifactIntegrityError(ProtocolViolationError):
    """Downloaded bytes do not match the artifact's declared size or SHA-256."""


class SidecarError(ColossusError):
    """The sidecar worker failed to start, broke the bootstrap protocol or kept exiting."""


class ClientClosedError(ColossusError):
    """The client was used after ``close()``."""

    default_reason = LocalReason.CLIENT_CLOSED
