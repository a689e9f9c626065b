"""The one place that maps a failed gRPC call to the SDK's error hierarchy.

The gRPC code picks the class, the ``colossus.api.v1alpha1`` ``ErrorInfo`` in the status
details gives the reason and its metadata (a reason can pick a narrower class), and a
mutation that failed in a way that may have taken effect becomes
:class:`OutcomeUnknownError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import grpc
from google.rpc import error_details_pb2, status_pb2

from ._errors import (
    ApiError,
    AuthenticationError,
    CapabilityMissingError,
    ColossusError,
    DataLossError,
    DeadlineExceededError,
    FailedPreconditionError,
    IdempotencyConflictError,
    InternalServerError,
    InvalidArgumentError,
    NotFoundError,
    OutcomeUnknownError,
    PermissionDeniedError,
    ResourceExhaustedError,
    TransportError,
)
from ._reasons import ErrorReason, LocalReason

ERROR_DOMAIN: Final = "colossus.api.v1alpha1"
_STATUS_DETAILS_KEY: Final = "grpc-status-details-bin"
# A RetryInfo delay above this (seconds) is ignored: no caller should sleep that long on a hint.
_MAX_RETRY_DELAY: Final = 3600.0
# A status-details blob larger than this is ignored rather than parsed.
_MAX_DETAILS_BYTES: Final = 16 * 1024
_EMPTY: Mapping[str, str] = MappingProxyType({})
# How grpcio's message says it refused an inbound message over the receive cap, for example
# "Received message larger than max (6050 vs. 4096)" (behind "Stream removed (CLIENT: "
# on a stream).
_RESPONSE_OVER_CAP: Final = "Received message larger than max"
# The cap in that text, reported as `metadata.limit` as the other SDKs do.
_RESPONSE_CAP_LIMIT: Final = re.compile(r"Received message larger than max \(\d+ vs\. (\d+)\)")

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


def _response_too_large(code: grpc.StatusCode, message: str, reason: str | None) -> bool:
    """Whether grpcio itself refused an inbound message over the channel's receive cap.

    That refusal is local (C7): grpcio ends the call with ``RESOURCE_EXHAUSTED`` and its
    own text, without the ``ErrorInfo`` every status of the worker carries.
    """
    return (
        code is grpc.StatusCode.RESOURCE_EXHAUSTED
        and reason is None
        and _RESPONSE_OVER_CAP in message
    )


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
    if _response_too_large(code, message, reason):
        # A local refusal, as REQUEST_TOO_LARGE is: no status code, the same reason in
        # every SDK.
        limit = _RESPONSE_CAP_LIMIT.search(message)
        return ResourceExhaustedError(
            "a response is larger than the accepted response cap"
            + (f" of {limit.group(1)} bytes" if limit else ""),
            reason=LocalReason.RESPONSE_TOO_LARGE,
            metadata={"limit": limit.group(1)} if limit else None,
            idempotency_key=idempotency_key,
        )
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
