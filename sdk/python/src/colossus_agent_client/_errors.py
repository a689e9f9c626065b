"""The one error hierarchy of the SDK, and the one place that maps gRPC failures to it.

Every exception the SDK raises on purpose derives from :class:`ColossusError`. Errors that
come from the worker carry the gRPC code, the ``ErrorInfo`` reason (without the
``ERROR_REASON_`` prefix) and its metadata; errors raised locally carry ``code=None``.
Nothing here ever formats a bearer: messages are built only from codes, reasons, metadata
keys the contract declares non-secret, and the server's human-readable text.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Final

import grpc
from google.rpc import error_details_pb2, status_pb2

ERROR_DOMAIN: Final = "colossus.api.v1alpha1"
_STATUS_DETAILS_KEY: Final = "grpc-status-details-bin"
# A RetryInfo delay above this (seconds) is ignored: no caller should sleep that long on a hint.
_MAX_RETRY_DELAY: Final = 3600.0
# A status-details blob larger than this is ignored rather than parsed.
_MAX_DETAILS_BYTES: Final = 16 * 1024
_EMPTY: Mapping[str, str] = MappingProxyType({})


class ErrorReason(str, enum.Enum):
    """Reasons the contract defines (``errors.proto``), without the ``ERROR_REASON_`` prefix.

    ``ColossusError.reason`` is a plain string so that a reason added by a newer worker is
    still visible; compare it with these members (they are ``str`` subclasses).
    """

    CREDENTIAL_MISSING = "CREDENTIAL_MISSING"
    CREDENTIAL_INVALID = "CREDENTIAL_INVALID"
    CREDENTIAL_NOT_ACTIVE = "CREDENTIAL_NOT_ACTIVE"
    CREDENTIAL_REVOKED = "CREDENTIAL_REVOKED"
    SCOPE_MISSING = "SCOPE_MISSING"
    ROLE_NOT_GRANTED = "ROLE_NOT_GRANTED"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    INTERACTION_NOT_FOUND = "INTERACTION_NOT_FOUND"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    FIELD_INVALID = "FIELD_INVALID"
    IDEMPOTENCY_KEY_INVALID = "IDEMPOTENCY_KEY_INVALID"
    IDEMPOTENCY_CONFLICT = "IDEMPOTENCY_CONFLICT"
    INPUT_TOO_MANY_PARTS = "INPUT_TOO_MANY_PARTS"
    INPUT_TOO_LARGE = "INPUT_TOO_LARGE"
    MAX_TURNS_OUT_OF_RANGE = "MAX_TURNS_OUT_OF_RANGE"
    SKILLS_NOT_SUPPORTED = "SKILLS_NOT_SUPPORTED"
    STATUS_FILTER_TOO_LARGE = "STATUS_FILTER_TOO_LARGE"
    PAGE_TOKEN_INVALID = "PAGE_TOKEN_INVALID"  # noqa: S105 - a reason name, not a secret
    INTERACTION_ANSWER_MISMATCH = "INTERACTION_ANSWER_MISMATCH"
    ARTIFACT_INTEGRITY_MISMATCH = "ARTIFACT_INTEGRITY_MISMATCH"
    ARTIFACT_NOT_ACCEPTED = "ARTIFACT_NOT_ACCEPTED"
    CAPABILITY_NOT_SUPPORTED = "CAPABILITY_NOT_SUPPORTED"
    INTERACTION_ALREADY_RESOLVED = "INTERACTION_ALREADY_RESOLVED"
    RUN_TERMINAL = "RUN_TERMINAL"
    PLAN_REVISION_STALE = "PLAN_REVISION_STALE"
    ACTIVE_RUN_LIMIT = "ACTIVE_RUN_LIMIT"
    CREATE_RATE_LIMIT = "CREATE_RATE_LIMIT"
    WATCH_LIMIT = "WATCH_LIMIT"
    LIST_CONCURRENCY_LIMIT = "LIST_CONCURRENCY_LIMIT"
    EVENT_LIMIT = "EVENT_LIMIT"
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"
    ARTIFACT_TOO_LARGE = "ARTIFACT_TOO_LARGE"
    UNAVAILABLE = "UNAVAILABLE"
    JOURNAL_INTEGRITY = "JOURNAL_INTEGRITY"
    INTERNAL = "INTERNAL"

    def __str__(self) -> str:
        return self.value


class LocalReason(str, enum.Enum):
    """Reasons the SDK gives to failures it detects itself (``code`` is ``None``, except
    ``UNREACHABLE``, which keeps the transport's ``UNAVAILABLE``). The same names in every
    SDK; the table of local reasons in ``docs/requirements.md`` says which failure carries
    which reason and error kind.
    """

    # trust (C1-C4, C6)
    DESCRIPTOR_INVALID = "DESCRIPTOR_INVALID"
    CERTIFICATE_INVALID = "CERTIFICATE_INVALID"
    PIN_MISMATCH = "PIN_MISMATCH"
    INSTANCE_MISMATCH = "INSTANCE_MISMATCH"
    TLS_VERSION = "TLS_VERSION"
    TLS_CHAIN = "TLS_CHAIN"
    TLS_HANDSHAKE = "TLS_HANDSHAKE"
    SERVER_INFO_MISMATCH = "SERVER_INFO_MISMATCH"
    # credentials (C5, C8)
    BEARER_MALFORMED = "BEARER_MALFORMED"
    PROVIDER_FAILED = "PROVIDER_FAILED"
    KEYRING_UNAVAILABLE = "KEYRING_UNAVAILABLE"
    KEYRING_ENTRY_MISSING = "KEYRING_ENTRY_MISSING"
    # transport
    UNREACHABLE = "UNREACHABLE"
    CLIENT_CLOSED = "CLIENT_CLOSED"
    # responses that break the contract
    RESPONSE_MALFORMED = "RESPONSE_MALFORMED"
    PAGE_NO_PROGRESS = "PAGE_NO_PROGRESS"
    WATCH_GAP = "WATCH_GAP"
    WATCH_REPLAY_ALTERED = "WATCH_REPLAY_ALTERED"
    WATCH_REPLAY_UNVERIFIABLE = "WATCH_REPLAY_UNVERIFIABLE"
    WATCH_WRONG_RUN = "WATCH_WRONG_RUN"
    WATCH_AFTER_TERMINAL = "WATCH_AFTER_TERMINAL"
    WATCH_RECONCILE_MISMATCH = "WATCH_RECONCILE_MISMATCH"
    WATCH_RECONNECTS_EXHAUSTED = "WATCH_RECONNECTS_EXHAUSTED"
    WATCH_IDLE_TIMEOUT = "WATCH_IDLE_TIMEOUT"
    ARTIFACT_MISMATCH = "ARTIFACT_MISMATCH"
    ARTIFACT_STREAM_ORDER = "ARTIFACT_STREAM_ORDER"
    ARTIFACT_SIZE_MISMATCH = "ARTIFACT_SIZE_MISMATCH"
    ARTIFACT_DIGEST_MISMATCH = "ARTIFACT_DIGEST_MISMATCH"
    # sidecar (S7, W16)
    SIDECAR_PROGRAM_NOT_FOUND = "SIDECAR_PROGRAM_NOT_FOUND"
    SIDECAR_SPAWN_FAILED = "SIDECAR_SPAWN_FAILED"
    STATE_DIR_INVALID = "STATE_DIR_INVALID"
    BOOTSTRAP_TOO_LARGE = "BOOTSTRAP_TOO_LARGE"
    BOOTSTRAP_MALFORMED = "BOOTSTRAP_MALFORMED"
    BOOTSTRAP_REFUSED = "BOOTSTRAP_REFUSED"
    BOOTSTRAP_IO = "BOOTSTRAP_IO"
    BOOTSTRAP_EOF = "BOOTSTRAP_EOF"
    BOOTSTRAP_TIMEOUT = "BOOTSTRAP_TIMEOUT"
    SIDECAR_RESTARTS_EXHAUSTED = "SIDECAR_RESTARTS_EXHAUSTED"

    def __str__(self) -> str:
        return self.value


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
    or a request over the worker's advertised size cap refused locally.

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


# --- mapping ----------------------------------------------------------------------------

_BY_CODE: Mapping[grpc.StatusCode, type[ColossusError]] = {
    grpc.StatusCode.UNAUTHENTICATED: AuthenticationError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgumentError,
    grpc.StatusCode.ALREADY_EXISTS: ApiError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.DATA_LOSS: DataLossError,
    grpc.StatusCode.INTERNAL: InternalServerError,
    grpc.StatusCode.UNIMPLEMENTED: ApiError,
    grpc.StatusCode.ABORTED: ApiError,
    grpc.StatusCode.UNAVAILABLE: TransportError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.CANCELLED: TransportError,
    grpc.StatusCode.UNKNOWN: TransportError,
}

_BY_REASON: Mapping[str, type[ColossusError]] = {
    ErrorReason.IDEMPOTENCY_CONFLICT: IdempotencyConflictError,
    ErrorReason.CAPABILITY_NOT_SUPPORTED: CapabilityMissingError,
}

# Codes after which a mutation may or may not have taken effect.
_AMBIGUOUS_FOR_MUTATIONS: frozenset[grpc.StatusCode] = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.ABORTED,
    }
)


def is_retryable_code(code: grpc.StatusCode | None) -> bool:
    """Only ``UNAVAILABLE`` is retryable, and only for reads (``errors.proto``)."""
    return code is grpc.StatusCode.UNAVAILABLE


def _details_blob(trailing_metadata: object) -> bytes | None:
    """The status-details bytes of the trailers, or ``None`` when absent or too large."""
    blob: bytes | None = None
    try:
        for key, value in trailing_metadata or ():  # type: ignore[attr-defined]
            if key == _STATUS_DETAILS_KEY and isinstance(value, bytes):
                blob = value
                break
    except (TypeError, ValueError):
        return None
    if blob is None or len(blob) > _MAX_DETAILS_BYTES:
        return None
    return blob


def decode_error_info(
    trailing_metadata: object,
) -> tuple[str | None, Mapping[str, str]]:
    """Extracts the ``colossus.api.v1alpha1`` ErrorInfo from a status's trailing metadata.

    Returns ``(None, {})`` when there is none or it cannot be decoded: the caller then
    falls back to the gRPC code, as the contract asks.
    """
    blob = _details_blob(trailing_metadata)
    if blob is None:
        return None, _EMPTY
    status = status_pb2.Status()
    try:
        status.ParseFromString(blob)
    except Exception:  # a malformed blob is treated as absent
        return None, _EMPTY
    for detail in status.details:
        if not detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            continue
        info = error_details_pb2.ErrorInfo()
        if not detail.Unpack(info) or info.domain != ERROR_DOMAIN:
            continue
        return (info.reason or None), dict(info.metadata)
    return None, _EMPTY


def decode_retry_delay(trailing_metadata: object) -> float | None:
    """The seconds of a status's ``google.rpc.RetryInfo``, or ``None`` without a usable one
    (absent, malformed, negative, or over an hour: a hint that large is not honoured)."""
    blob = _details_blob(trailing_metadata)
    if blob is None:
        return None
    status = status_pb2.Status()
    try:
        status.ParseFromString(blob)
    except Exception:  # a malformed blob is treated as absent
        return None
    for detail in status.details:
        if not detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            continue
        retry = error_details_pb2.RetryInfo()
        if not detail.Unpack(retry):
            return None
        seconds = retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
        return seconds if 0 <= seconds <= _MAX_RETRY_DELAY else None
    return None


def map_status(
    code: grpc.StatusCode,
    message: str,
    trailing_metadata: object,
    *,
    mutation: bool = False,
    idempotency_key: str | None = None,
) -> ColossusError:
    """Maps one failed call to the SDK's hierarchy. The single source of that mapping."""
    reason, metadata = decode_error_info(trailing_metadata)
    text = message or code.name.lower()
    if mutation and code in _AMBIGUOUS_FOR_MUTATIONS:
        return OutcomeUnknownError(
            f"the outcome of the call is unknown: {text}",
            code=code,
            reason=reason,
            metadata=metadata,
            idempotency_key=idempotency_key,
        )
    cls = (_BY_REASON.get(reason) if reason else None) or _BY_CODE.get(code, ApiError)
    error = cls(text, code=code, reason=reason, metadata=metadata, idempotency_key=idempotency_key)
    if isinstance(error, ResourceExhaustedError):
        error.retry_delay = decode_retry_delay(trailing_metadata)
    return error


def from_rpc_error(
    error: grpc.RpcError,
    *,
    mutation: bool = False,
    idempotency_key: str | None = None,
) -> ColossusError:
    """Maps a ``grpc.RpcError`` (sync) or ``grpc.aio.AioRpcError`` (async)."""
    code_fn = getattr(error, "code", None)
    code = code_fn() if callable(code_fn) else None
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    details_fn = getattr(error, "details", None)
    details = details_fn() if callable(details_fn) else None
    trailers_fn = getattr(error, "trailing_metadata", None)
    trailers = trailers_fn() if callable(trailers_fn) else None
    return map_status(
        code,
        details if isinstance(details, str) else "",
        trailers,
        mutation=mutation,
        idempotency_key=idempotency_key,
    )
