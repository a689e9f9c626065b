"""One place that turns worker failures into gRPC statuses.

Every failure leaves the worker as a gRPC status whose details
(``grpc-status-details-bin``) hold a ``google.rpc.Status`` with exactly one
``google.rpc.ErrorInfo``: domain ``colossus.api.v1alpha1`` and a reason named
after an ``ErrorReason`` value without its prefix. The contract does not
import ``google/rpc``, so the two messages are encoded here by hand; they are
tiny and their field numbers are frozen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from grpclib.const import Status
from grpclib.encoding.base import StatusDetailsCodecBase
from grpclib.exceptions import GRPCError

from .wire.protowire import length_delimited, varint

DOMAIN = "colossus.api.v1alpha1"
_STATUS_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
_RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo"


class ApiError(Exception):
    """A failure with a public code, reason and message.

    The message is shown to callers, so it must never contain paths, SQL,
    stack traces, tool names or secrets. ``metadata`` may carry the hints
    ``field``, ``limit``, ``scope`` and ``capability``. ``retry_delay`` (seconds), when
    set, goes out as a ``google.rpc.RetryInfo`` beside the ``ErrorInfo``: the earliest
    moment a retry of the same request can succeed.
    """

    def __init__(
        self,
        code: Status,
        reason: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        retry_delay: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata: dict[str, str] = dict(metadata or {})
        self.retry_delay = retry_delay

    def to_grpc(self) -> GRPCError:
        return GRPCError(self.code, self.message, (self.reason, self.metadata, self.retry_delay))


class JournalIntegrityError(Exception):
    """The journal failed verification. Never shown to callers verbatim."""


class StorageUnavailable(Exception):
    """The journal cannot be written (read-only file system, I/O error).

    The message names the cause for the operator's log; callers only learn
    that storage is unavailable.
    """


class StorageFull(StorageUnavailable):
    """The file system holding the journal has no space left."""


# --- shorthands used across the worker -------------------------------------


def invalid(field: str, message: str) -> ApiError:
    return ApiError(Status.INVALID_ARGUMENT, "FIELD_INVALID", message, {"field": field})


def exhausted(
    reason: str, message: str, limit: str, retry_delay: float | None = None
) -> ApiError:
    return ApiError(Status.RESOURCE_EXHAUSTED, reason, message, {"limit": limit}, retry_delay)


def run_not_found() -> ApiError:
    return ApiError(Status.NOT_FOUND, "RUN_NOT_FOUND", "run not found")


def integrity_failure() -> ApiError:
    return ApiError(
        Status.DATA_LOSS, "JOURNAL_INTEGRITY", "the journal failed its integrity check"
    )


def internal() -> ApiError:
    return ApiError(Status.INTERNAL, "INTERNAL", "internal error")


def unavailable(message: str = "the worker is shutting down") -> ApiError:
    return ApiError(Status.UNAVAILABLE, "UNAVAILABLE", message)


def storage_unavailable(exc: StorageUnavailable) -> ApiError:
    """What a caller learns when the journal cannot take a write (retryable)."""
    if isinstance(exc, StorageFull):
        return unavailable("the worker is out of storage; retry once space is freed")
    return unavailable("the worker cannot write its journal; retry later")


# --- google.rpc.Status / ErrorInfo wire encoding ------------------------------


def encode_error_info(reason: str, metadata: Mapping[str, str]) -> bytes:
    body = length_delimited(1, reason.encode()) + length_delimited(2, DOMAIN.encode())
    for key in sorted(metadata):
        entry = length_delimited(1, key.encode()) + length_delimited(2, metadata[key].encode())
        body += length_delimited(3, entry)
    return body


def encode_retry_info(seconds: float) -> bytes:
    """``google.rpc.RetryInfo{retry_delay: google.protobuf.Duration}``, rounded up to
    whole milliseconds so a client that waits exactly this long is not early."""
    millis = max(0, math.ceil(seconds * 1000))
    whole, nanos = divmod(millis, 1000)
    duration = b""
    if whole:
        duration += varint(1 << 3) + varint(whole)
    if nanos:
        duration += varint(2 << 3) + varint(nanos * 1_000_000)
    return length_delimited(1, duration)


def encode_status(
    code: int,
    message: str,
    reason: str,
    metadata: Mapping[str, str],
    retry_delay: float | None = None,
) -> bytes:
    any_msg = length_delimited(1, _STATUS_TYPE.encode()) + length_delimited(
        2, encode_error_info(reason, metadata)
    )
    body = b""
    if code:
        body += varint(1 << 3) + varint(code)
    if message:
        body += length_delimited(2, message.encode())
    body += length_delimited(3, any_msg)
    if retry_delay is not None:
        retry_any = length_delimited(1, _RETRY_INFO_TYPE.encode()) + length_delimited(
            2, encode_retry_info(retry_delay)
        )
        body += length_delimited(3, retry_any)
    return body


class ErrorInfoDetailsCodec(StatusDetailsCodecBase):
    """grpclib details codec: ``details`` is ``(reason, metadata[, retry_delay])``."""

    def encode(self, status: Status, message: str | None, details: Any) -> bytes:
        reason, metadata, *rest = details
        retry_delay = rest[0] if rest else None
        return encode_status(status.value, message or "", reason, metadata, retry_delay)

    def decode(self, status: Status, message: str | None, data: bytes) -> Any:
        return data  # the worker never reads statuses back
