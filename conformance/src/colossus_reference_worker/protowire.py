"""Protobuf wire-format primitives for the few messages the worker encodes by hand.

Used for `google.rpc.Status` (which the contract does not import) and for the fast
watch-event path; everything else goes through the generated classes.
"""

from __future__ import annotations

_SMALL = [bytes([n]) for n in range(128)]


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
