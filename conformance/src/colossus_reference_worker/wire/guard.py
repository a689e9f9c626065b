"""Bounds checks on raw request bytes, before the message is decoded (W7).

The scanner walks only the top-level fields of a protobuf message. It lets
the worker refuse the 129th ``CreateRunRequest.input`` part, the first
``selected_skills`` entry and the 10th ``ListRunsRequest.statuses`` value
(packed or not) without building the decoded lists. Decoding and full
validation still follow as a second line of defence.
"""

from __future__ import annotations

from collections.abc import Iterator

from grpclib.const import Status

from ..config import Limits
from ..errors import ApiError, invalid
from .protowire import Malformed, read_varint


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    return read_varint(data, pos, len(data))


def top_level_fields(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """Yield ``(field, wire_type, start, end)``; for varints start/end span the value."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        start = pos
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, start = _varint(data, pos)
            pos = start + length
        elif wire == 5:
            pos += 4
        else:
            raise Malformed()
        if pos > len(data) or field == 0:
            raise Malformed()
        yield field, wire, start, pos


def _count_varints(data: bytes, start: int, end: int) -> int:
    count = 0
    pos = start
    while pos < end:
        _, pos = _varint(data, pos)
        count += 1
    return count


def check_create_run(data: bytes, limits: Limits) -> None:
    parts = 0
    try:
        for field, _, _, _ in top_level_fields(data):
            if field == 2:
                parts += 1
                if parts > limits.max_input_parts:
                    raise ApiError(
                        Status.INVALID_ARGUMENT, "INPUT_TOO_MANY_PARTS",
                        f"at most {limits.max_input_parts} input parts are accepted",
                        {"field": "input", "limit": "max_input_parts"},
                    )
            elif field == 10:
                raise ApiError(
                    Status.INVALID_ARGUMENT, "SKILLS_NOT_SUPPORTED",
                    "skills cannot be selected through this API version",
                    {"field": "selected_skills"},
                )
    except Malformed:
        raise invalid("request", "the request is not a valid protobuf message") from None


def check_list_runs(data: bytes, limits: Limits) -> None:
    values = 0
    try:
        for field, wire, start, end in top_level_fields(data):
            if field != 1:
                continue
            values += 1 if wire == 0 else _count_varints(data, start, end) if wire == 2 else 0
            if values > limits.max_list_status_filters:
                raise ApiError(
                    Status.INVALID_ARGUMENT, "STATUS_FILTER_TOO_LARGE",
                    f"at most {limits.max_list_status_filters} status values are accepted",
                    {"field": "statuses", "limit": "max_list_status_filters"},
                )
    except Malformed:
        raise invalid("request", "the request is not a valid protobuf message") from None
