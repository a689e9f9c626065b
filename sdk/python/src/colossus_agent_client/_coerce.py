"""Lenient readers for enum-typed arguments: a member, or its name as a string.

``mode="plan"`` and ``statuses=["SUCCEEDED"]`` read as well as the enum members; anything
else is refused with an error that lists the accepted names.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TypeVar

from ._errors import InvalidArgumentError

E = TypeVar("E", bound=enum.Enum)


def _allowed(enum_type: type[enum.Enum]) -> str:
    return ", ".join(member.name for member in enum_type if member.value != 0)


def enum_arg(value: object, enum_type: type[E], field: str) -> E:
    """``value`` as a member of ``enum_type``; names match case-insensitively."""
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str):
        member = enum_type.__members__.get(value.strip().upper())
        if member is not None:
            return member
        raise InvalidArgumentError(
            f"{field} must be one of {_allowed(enum_type)}, not {value[:40]!r}",
            reason="FIELD_INVALID",
            metadata={"field": field},
        )
    raise TypeError(
        f"{field} must be a {enum_type.__name__} or one of the names {_allowed(enum_type)}, "
        f"not {type(value).__name__}"
    )


def enum_args(values: Iterable[object], enum_type: type[E], field: str) -> tuple[E, ...]:
    """Each of ``values`` through :func:`enum_arg`; a lone string is refused (a common slip)."""
    if isinstance(values, str | bytes):
        raise TypeError(
            f"{field} must be a collection of {enum_type.__name__} values, not a string"
        )
    return tuple(enum_arg(value, enum_type, field) for value in values)
