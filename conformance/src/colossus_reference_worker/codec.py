"""The grpclib codec for betterproto2 messages, and the bounded request reader."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import betterproto2
from grpclib.const import Status
from grpclib.encoding.base import CodecBase
from grpclib.server import Stream

from .errors import ApiError, invalid


class BetterprotoCodec(CodecBase):
    __content_subtype__ = "proto"

    def encode(self, message: Any, message_type: Any) -> bytes:
        # Pre-encoded replies (fast watch path) pass through unchanged.
        return message if isinstance(message, bytes) else bytes(message)

    def decode(self, data: bytes, message_type: Any) -> Any:
        return message_type.parse(data)


async def read_request(
    stream: Stream[Any, Any],
    message_type: type[betterproto2.Message],
    max_bytes: int,
    guard: Callable[[bytes], None] | None = None,
) -> Any:
    """Read one request message, refusing oversize frames before buffering them.

    The gRPC length prefix is checked against ``max_bytes`` first; the raw
    bytes then pass ``guard`` (the wire-level checks) and only then are
    decoded.
    """
    raw = stream._stream  # grpclib exposes no hook at the length prefix
    meta = await raw.recv_data(5)
    if len(meta) < 5:
        raise invalid("request", "the request message is missing")
    compressed, length = struct.unpack(">?I", meta)
    if compressed:
        raise ApiError(Status.UNIMPLEMENTED, "FIELD_INVALID", "compressed messages are not supported",
                       {"field": "request"})
    if length > max_bytes:
        raise ApiError(
            Status.RESOURCE_EXHAUSTED, "REQUEST_TOO_LARGE",
            f"the request exceeds {max_bytes} bytes", {"limit": "max_request_bytes"},
        )
    data = await raw.recv_data(length)
    if len(data) != length:
        raise invalid("request", "the request message is truncated")
    if guard is not None:
        guard(data)
    try:
        return message_type.parse(data)
    except Exception:
        raise invalid("request", "the request is not a valid protobuf message") from None
