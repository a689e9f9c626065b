"""Structural check of a request's raw bytes against its message type, before decoding.

Decoding is the expensive, unbounded part of reading a request: betterproto2
concatenates every unknown field into one ``bytes`` value (quadratic in their
number) and builds an object per known field, all on the event loop. The check
here walks the bytes once, with early exits, and refuses what no SDK sends and
what would make decoding costly or wrong:

* a field whose wire type does not match its declared type (a varint where a
  string belongs, a group anywhere);
* a string that is not UTF-8;
* a singular field, or a second member of a oneof, given more than once;
* more than ``MAX_REPEATED`` values of a repeated field (packed or not);
* more than ``MAX_UNKNOWN_FIELDS`` unknown fields in one message (a few are
  tolerated, as protobuf's forward compatibility expects; they are skipped).

Because every rule stops the walk at its first violation, the check's own cost
is bounded by the number of fields a valid message can have, not by the size
of the request. Errors name the field by its path (``input[3].text``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import invalid
from .protowire import Malformed, read_varint

MAX_UNKNOWN_FIELDS = 16
MAX_REPEATED = 128

_WIRE_OF_TYPE = {
    "string": 2, "bytes": 2, "message": 2,
    "enum": 0, "bool": 0, "int32": 0, "int64": 0, "uint32": 0, "uint64": 0,
    "sint32": 0, "sint64": 0,
    "fixed64": 1, "sfixed64": 1, "double": 1,
    "fixed32": 5, "sfixed32": 5, "float": 5,
}
_FIXED_SIZE = {1: 8, 5: 4}


@dataclass(frozen=True)
class _Field:
    name: str
    wire: int
    repeated: bool
    oneof: str | None
    utf8: bool
    message: type[Any] | None


_SCHEMAS: dict[type[Any], dict[int, _Field]] = {}


def _schema(message_type: type[Any]) -> dict[int, _Field]:
    known = _SCHEMAS.get(message_type)
    if known is None:
        known = _SCHEMAS[message_type] = _build_schema(message_type)
    return known


def _build_schema(message_type: type[Any]) -> dict[int, _Field]:
    meta = message_type._betterproto
    fields: dict[int, _Field] = {}
    for name, field in meta.meta_by_field_name.items():
        nested = meta.cls_by_field[name] if field.proto_type == "message" else None
        if field.map_meta:  # maps travel as repeated entry messages
            nested = meta.cls_by_field[name]
        fields[field.number] = _Field(
            name, _WIRE_OF_TYPE[field.proto_type] if not field.map_meta else 2,
            bool(field.repeated or field.map_meta), field.group,
            field.proto_type == "string", nested,
        )
    return fields


def _packed_count(data: bytes | memoryview, start: int, end: int, wire: int, limit: int) -> int:
    """How many values a packed run holds; stops counting past ``limit``."""
    if wire in _FIXED_SIZE:
        size = _FIXED_SIZE[wire]
        if (end - start) % size:
            raise Malformed()
        return (end - start) // size
    count, pos = 0, start
    while pos < end and count <= limit:
        _, pos = read_varint(data, pos, end)
        count += 1
    return count


def _path(parent: str, name: str, index: int | None) -> str:
    here = f"{parent}.{name}" if parent else name
    return here if index is None else f"{here}[{index}]"


def _check(message_type: type[Any], data: memoryview, start: int, end: int, where: str) -> None:
    schema = _schema(message_type)
    seen: dict[int, int] = {}
    oneofs: dict[str, str] = {}
    unknown = 0
    pos = start
    while pos < end:
        key, pos = read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise Malformed()
        value_start = pos
        if wire == 0:
            _, pos = read_varint(data, pos, end)
        elif wire == 2:
            length, value_start = read_varint(data, pos, end)
            pos = value_start + length
        elif wire in _FIXED_SIZE:
            pos += _FIXED_SIZE[wire]
        else:  # groups (3, 4) and the unused wire types 6, 7
            field = schema.get(number)
            raise invalid(_path(where, field.name, None) if field else where or "request",
                          "groups and unknown wire types are not accepted")
        if pos > end:
            raise Malformed()
        field = schema.get(number)
        if field is None:
            unknown += 1
            if unknown > MAX_UNKNOWN_FIELDS:
                raise invalid(where or "request",
                              f"more than {MAX_UNKNOWN_FIELDS} unknown fields in one message")
            continue
        count = seen.get(number, 0)
        name = _path(where, field.name, None)
        packed = field.repeated and wire == 2 and field.wire != 2
        if wire != field.wire and not packed:
            raise invalid(name, f"{name} has the wrong wire type for its declared type")
        if not field.repeated:
            if count:
                raise invalid(name, f"{name} is given more than once")
            if field.oneof is not None:
                other = oneofs.setdefault(field.oneof, field.name)
                if other != field.name:
                    raise invalid(name, f"at most one of the oneof '{field.oneof}' may be set")
        added = _packed_count(data, value_start, pos, field.wire, MAX_REPEATED) if packed else 1
        seen[number] = count + added
        if seen[number] > MAX_REPEATED:
            raise invalid(name, f"{name} has more than {MAX_REPEATED} values")
        if field.utf8:
            try:
                str(data[value_start:pos], "utf-8")
            except UnicodeDecodeError:
                raise invalid(name, f"{name} is not valid UTF-8") from None
        elif field.message is not None:
            index = count if field.repeated else None
            _check(field.message, data, value_start, pos, _path(where, field.name, index))


def check_message(message_type: type[Any], data: bytes) -> None:
    """Raise ``INVALID_ARGUMENT`` naming the field when ``data`` breaks a rule above."""
    try:
        _check(message_type, memoryview(data), 0, len(data), "")
    except Malformed:
        raise invalid("request", "the request is not a valid protobuf message") from None
