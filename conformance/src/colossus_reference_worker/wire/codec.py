"""The grpclib codec for betterproto2 messages, and the bounded request reader."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import betterproto2
from grpclib.const import Status
from grpclib.encoding.base import CodecBase
from grpclib.server import Stream

from ..errors import ApiError, invalid
from .schema import check_message

M = TypeVar("M", bound=betterproto2.Message)


class BetterprotoCodec(CodecBase):
    __content_subtype__ = "proto"

    def encode(self, message: Any, message_type: Any) -> bytes:
        # Pre-encoded replies (fast watch path) pass through unchanged.
        return message if isinstance(message, bytes) else bytes(message)

    def decode(self, data: bytes, message_type: Any) -> Any:
        return message_type.parse(data)


async def read_frame(stream: Stream[Any, Any], max_bytes: int) -> bytes | None:
    """Read one gRPC length-prefixed frame, refusing an oversize one before buffering it.

    Returns None when the client ended its side of the stream cleanly before a frame.
    """
    raw = stream._stream  # grpclib exposes no hook at the length prefix
    meta = await _recv(raw, 5)
    if not meta:
        return None
    compressed, length = struct.unpack(">?I", meta)
    _check_prefix(compressed, length, max_bytes)
    data = await _recv(raw, length)
    if len(data) != length:
        raise _truncated()
    return data


def _check_prefix(compressed: bool, length: int, max_bytes: int) -> None:
    """Refuses a frame by its 5-byte prefix: compressed, or longer than ``max_bytes``."""
    if compressed:
        raise ApiError(Status.UNIMPLEMENTED, "FIELD_INVALID", "compressed messages are not supported",
                       {"field": "request"})
    if length > max_bytes:
        raise ApiError(
            Status.RESOURCE_EXHAUSTED, "REQUEST_TOO_LARGE",
            f"the request exceeds {max_bytes} bytes", {"limit": "max_request_bytes"},
        )


async def _recv(raw: Any, size: int) -> bytes:
    """``size`` bytes, or ``b""`` at a clean end of the client's stream.

    grpclib's buffer asserts when the stream ends part-way through the bytes
    asked for; that is a truncated request, the client's fault, not ours.
    """
    try:
        data: bytes = await raw.recv_data(size)
    except AssertionError:
        raise _truncated() from None
    if data and len(data) < size:
        raise _truncated()
    return data


def _truncated() -> ApiError:
    return invalid("request", "the request message is truncated")


async def _expect_end(stream: Stream[Any, Any]) -> None:
    """Refuse a second message where the method takes exactly one."""
    if await _recv(stream._stream, 1):
        raise _second_message()


def _second_message() -> ApiError:
    return invalid("request", "this method takes exactly one request message")


def parse_request(message_type: type[M], data: bytes) -> M:
    """Decode one request message; anything undecodable is INVALID_ARGUMENT."""
    try:
        return message_type.parse(data)
    except Exception:
        raise invalid("request", "the request is not a valid protobuf message") from None


async def read_request(
    stream: Stream[Any, Any],
    message_type: type[M],
    max_bytes: int,
    guard: Callable[[bytes], None] | None = None,
) -> M:
    """Read the one request message of a unary or server-streaming call.

    The gRPC length prefix is checked against ``max_bytes`` first; the raw
    bytes then pass ``guard`` (the method's own limits) and the structural
    check of :mod:`schema`, the client's side must then end, and only
    then is the message decoded.
    """
    buffered = _take_buffered(stream, max_bytes)
    if buffered is not None:
        # The client already ended its side: the same checks, without a wait.
        data, rest = _split_frame(buffered, max_bytes)
        if data is None:
            raise invalid("request", "the request message is missing")
        if guard is not None:
            guard(data)
        check_message(message_type, data)
        if rest:
            raise _second_message()
        return parse_request(message_type, data)
    data = await read_frame(stream, max_bytes)
    if data is None:
        raise invalid("request", "the request message is missing")
    if guard is not None:
        guard(data)
    check_message(message_type, data)
    await _expect_end(stream)
    return parse_request(message_type, data)


def _take_buffered(stream: Stream[Any, Any], max_bytes: int) -> bytes | None:
    """Every byte of a request whose client side already ended, or None if it has not.

    Takes the chunks out of grpclib's stream buffer and acknowledges them for
    flow control, as its reads do, and like them stops at the first chunk that
    carries nothing (grpclib's end mark, or an empty unpadded DATA frame, which
    its reads take for the end too). Only for a buffer nobody read from yet,
    holding no more than one message of ``max_bytes`` and a byte: anything
    larger is refused by the awaited reads, which never join it.
    """
    buffer = getattr(getattr(stream, "_stream", None), "buffer", None)
    if buffer is None or buffer._eof is not True or buffer._acked:
        return None
    queue = buffer._unacked
    if sum(item.data_size for item in queue._queue) > max_bytes + 6:
        return None
    chunks: list[bytes] = []
    while not queue.empty():
        data, _, ack_size = queue.get_nowait()
        if not ack_size:
            break
        chunks.append(data)
        buffer._ack_callback(ack_size)
    return b"".join(chunks)


def _split_frame(data: bytes, max_bytes: int) -> tuple[bytes | None, bytes]:
    """The first length-prefixed message in ``data`` (None if there is none) and what follows.

    The same checks and errors as :func:`read_frame`, in the same order.
    """
    if not data:
        return None, b""
    if len(data) < 5:
        raise _truncated()
    compressed, length = struct.unpack_from(">?I", data)
    _check_prefix(compressed, length, max_bytes)
    end = 5 + length
    if len(data) < end:
        raise _truncated()
    return data[5:end], data[end:]


async def read_messages(
    stream: Stream[Any, Any], message_type: type[M], max_bytes: int
) -> AsyncIterator[M]:
    """Each request message of a client stream, every frame bounded by ``max_bytes``."""
    while (data := await read_frame(stream, max_bytes)) is not None:
        check_message(message_type, data)
        yield parse_request(message_type, data)
