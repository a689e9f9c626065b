"""Protobuf wire-format primitives for what the worker encodes or inspects by hand.

Encoding serves `google.rpc.Status` (which the contract does not import) and the fast
watch-event path; decoding serves the request guards (``guard``, ``schema``)
that look at raw bytes before the generated classes parse them.
"""

from __future__ import annotations

_SMALL = [bytes([n]) for n in range(128)]
MAX_VARINT_BYTES = 10


class Malformed(Exception):
    """The bytes are not well-formed protobuf wire format."""


def read_varint(data: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it; it must end before ``end``."""
    value = shift = 0
    for _ in range(MAX_VARINT_BYTES):
        if pos >= end:
            break
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise Malformed()


def varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer."""
    if value < 128:
        return _SMALL[value]
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(field: int, wire: int) -> bytes:
    """Field key: the field number and wire type."""
    return varint(field << 3 | wire)


def length_delimited(field: int, data: bytes) -> bytes:
    """A wire-type-2 field (bytes, string or embedded message)."""
    return key(field, 2) + varint(len(data)) + data


def string(field: int, text: str) -> bytes:
    """A proto3 string field: omitted when empty, as proto3 does."""
    return length_delimited(field, text.encode()) if text else b""


def uint(field: int, value: int) -> bytes:
    """A proto3 varint field (uint, enum): omitted when zero."""
    return key(field, 0) + varint(value) if value else b""


def timestamp(us: int) -> bytes:
    """The body of a ``google.protobuf.Timestamp`` for microseconds since the epoch."""
    seconds, micros = divmod(us, 1_000_000)
    return uint(1, seconds) + uint(2, micros * 1000)
