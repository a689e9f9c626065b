"""Strict JSON for the discovery files and the sidecar bootstrap reply.

One JSON object in UTF-8, with no duplicate member at any depth, no ``NaN`` or
``Infinity``, no number Python would refuse to convert, and no nesting deeper than the
Go and Rust readers accept. Any other document is refused with the caller's error type.
"""

from __future__ import annotations

import json

from .._errors import DescriptorError


def _reject_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise DescriptorError(f"duplicate member {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> object:
    raise DescriptorError(f"non-standard JSON constant {name}")


def load_json_object(raw: bytes, *, what: str, error: type[Exception]) -> dict[str, object]:
    """Decodes one strict JSON object: UTF-8, no duplicate keys, no NaN/Infinity."""
    try:
        text = raw.decode("utf-8")
        value = json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except DescriptorError as exc:
        raise error(f"{what}: {exc.message}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise error(f"{what} is not valid UTF-8 JSON") from None
    except ValueError:
        # For example an integer past Python's digit limit for int(str).
        raise error(f"{what} holds a value this reader refuses (too long a number)") from None
    if _nested_too_deeply(value):
        raise error(f"{what} is nested too deeply")
    if not isinstance(value, dict):
        raise error(f"{what} must be a JSON object")
    return value


# Nesting bound shared with the Go and Rust readers; Python's own recursion limit differs
# between versions (3.13 parses 5,000 levels that 3.11 refuses), so it cannot be the rule.
_MAX_JSON_DEPTH = 32


def _nested_too_deeply(value: object) -> bool:
    """Whether any value sits deeper than ``_MAX_JSON_DEPTH`` (the root is depth 0)."""
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > _MAX_JSON_DEPTH:
            return True
        if isinstance(item, dict):
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            pending.extend((child, depth + 1) for child in item)
    return False
