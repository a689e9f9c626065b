"""Evaluates a case's assertions against what was observed.

Every judgement of the suite happens here, in the runner. Clients report raw
observations; the worker reports what it saw on the wire. Both are combined
into one context document:

    {"steps":  {<step id>: {"op", "value", "error", "hooks"}},
     "worker": <fault-control observations, plus derived fields>,
     "case":   {"id", "level"}}

An assertion names a path into that document and one or more checks. Paths
are dot-separated keys with optional list selectors: ``[0]``, ``[-1]`` and
``[*]`` (project the rest of the path over every element); a ``*`` key projects
over every member of an object (``steps.*.error.kind``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()

_SEGMENT = re.compile(r"^(?P<key>[^\[\]]*)(?P<sel>(\[(-?\d+|\*)\])*)$")
_SELECTOR = re.compile(r"\[(-?\d+|\*)\]")


@dataclass(frozen=True)
class Outcome:
    """One assertion's verdict."""

    ok: bool
    description: str


def resolve(document: Any, path: str) -> Any:
    """Returns the value at ``path``, or MISSING."""
    segments = path.split(".")
    return _resolve(document, segments)


def _resolve(value: Any, segments: list[str]) -> Any:
    if not segments:
        return value
    segment, rest = segments[0], segments[1:]
    m = _SEGMENT.match(segment)
    if m is None:
        return MISSING
    key = m.group("key")
    if key == "*" and not m.group("sel"):
        # Projects the rest of the path over every member of an object, in order.
        if not isinstance(value, dict):
            return MISSING
        projected = [_resolve(v, rest) for v in value.values()]
        return [p for p in projected if p is not MISSING]
    if key:
        if not isinstance(value, dict) or key not in value:
            return MISSING
        value = value[key]
    selectors = _SELECTOR.findall(m.group("sel") or "")
    for i, sel in enumerate(selectors):
        if not isinstance(value, list):
            return MISSING
        if sel == "*":
            remaining_sel = "".join(f"[{s}]" for s in selectors[i + 1 :])
            tail = ([remaining_sel] if remaining_sel else []) + rest
            projected = []
            for item in value:
                r = _resolve(item, tail) if tail else item
                if r is not MISSING:
                    projected.append(r)
            return projected
        index = int(sel)
        if not -len(value) <= index < len(value):
            return MISSING
        value = value[index]
    return _resolve(value, rest)


def evaluate(assertion: dict[str, Any], document: dict[str, Any]) -> Outcome:
    """Checks one assertion; every check listed in it must hold."""
    path = assertion["path"]
    actual = resolve(document, path)
    if actual is MISSING and path.startswith("worker.rpc_calls."):
        actual = 0  # a method the worker never saw was called zero times
    failures: list[str] = []
    for check, raw_expected in assertion.items():
        if check in ("path", "why"):
            continue
        expected = (
            expand_refs(raw_expected, document)
            if check not in ("equals_path", "not_equals_path")
            else raw_expected
        )
        problem = _check(check, expected, actual, document)
        if problem:
            failures.append(problem)
    why = f" ({assertion['why']})" if "why" in assertion else ""
    if failures:
        return Outcome(False, f"{path}: " + "; ".join(failures) + why)
    return Outcome(True, f"{path}: ok")


def _check(check: str, expected: Any, actual: Any, document: dict[str, Any]) -> str | None:
    shown = _show(actual)
    if check == "exists":
        present = actual is not MISSING and actual is not None
        if present != expected:
            return f"expected {'present' if expected else 'absent'}, got {shown}"
        return None
    if check == "equals":
        return None if _same(actual, expected) else f"expected {expected!r}, got {shown}"
    if check == "not_equals":
        return None if not _same(actual, expected) else f"expected anything but {expected!r}"
    if check == "in":
        return (
            None if any(_same(actual, e) for e in expected) else f"expected one of {expected!r}, got {shown}"
        )
    if check == "equals_path":
        other = resolve(document, expected)
        if actual is MISSING or other is MISSING:
            return f"cannot compare with {expected}: {shown} vs {_show(other)}"
        return None if _same(actual, other) else f"expected equal to {expected} ({_show(other)}), got {shown}"
    if check == "not_equals_path":
        other = resolve(document, expected)
        if actual is MISSING or other is MISSING:
            return f"cannot compare with {expected}: {shown} vs {_show(other)}"
        return None if not _same(actual, other) else f"expected different from {expected}, both {shown}"
    if check in ("length", "min_length"):
        if not isinstance(actual, (list, dict, str)):
            return f"expected a collection, got {shown}"
        n = len(actual)
        if check == "length" and n != expected:
            return f"expected length {expected}, got {n} ({shown})"
        if check == "min_length" and n < expected:
            return f"expected length >= {expected}, got {n}"
        return None
    if check in ("contains", "not_contains"):
        if not isinstance(actual, (list, str, dict)):
            return f"expected a collection, got {shown}"
        has = expected in actual if not isinstance(actual, list) else any(_same(a, expected) for a in actual)
        if check == "contains" and not has:
            return f"expected to contain {expected!r}, got {shown}"
        if check == "not_contains" and has:
            return f"expected not to contain {expected!r}, got {shown}"
        return None
    if check == "matches":
        if not isinstance(actual, str) or re.fullmatch(expected, actual) is None:
            return f"expected to match /{expected}/, got {shown}"
        return None
    if check in ("at_least", "at_most"):
        if not isinstance(actual, (int, float)) or isinstance(actual, bool):
            return f"expected a number, got {shown}"
        if not isinstance(expected, (int, float)) or isinstance(expected, bool):
            return f"the bound is not a number: {_show(expected)}"
        if check == "at_least" and actual < expected:
            return f"expected >= {expected}, got {actual}"
        if check == "at_most" and actual > expected:
            return f"expected <= {expected}, got {actual}"
        return None
    if check == "consecutive_after":
        if not isinstance(expected, int) or isinstance(expected, bool):
            return f"cannot compare: the cursor {expected!r} is not an integer"
        check, expected = "consecutive_from", expected + 1
    if check == "consecutive_from":
        if not isinstance(actual, list) or not all(isinstance(a, int) for a in actual):
            return f"expected a list of integers, got {shown}"
        want = list(range(expected, expected + len(actual)))
        return (
            None
            if actual == want
            else f"expected {expected}, {expected + 1}, ... with no repeat or hole, got {shown}"
        )
    if check == "starts_with":
        if not isinstance(actual, list) or not isinstance(expected, list):
            return f"expected a list starting with {expected!r}, got {shown}"
        head = actual[: len(expected)]
        ok = len(head) == len(expected) and all(_same(a, e) for a, e in zip(head, expected, strict=True))
        return None if ok else f"expected a list starting with {expected!r}, got {shown}"
    if check == "unique":
        if not isinstance(actual, list):
            return f"expected a list, got {shown}"
        keys = [repr(a) for a in actual]
        dup = len(set(keys)) != len(keys)
        return f"expected unique items, got {shown}" if dup == expected else None
    return f"unknown check {check!r}"


def ref_to_path(ref: str) -> str:
    """Turns a step reference (``$step.a.-1.b``) into an assertion path.

    ``$client.…`` names the client's hello instead (``$client.retry_budget.watch_attempts``).
    """
    step, *rest = ref[1:].split(".")
    path = "client" if step == "client" else f"steps.{step}.value"
    for segment in rest:
        if segment.lstrip("-").isdigit():
            path += f"[{segment}]"
        else:
            path += f".{segment}"
    return path


def expand_refs(value: Any, document: dict[str, Any]) -> Any:
    """Replaces step references inside an expected value by what they point at.

    The same ``$step.path`` notation clients use in step arguments works in
    assertions, so a case can say "the list equals these runs, in this order".
    """
    if isinstance(value, str) and value.startswith("$") and len(value) > 1:
        return resolve(document, ref_to_path(value))
    if isinstance(value, list):
        return [expand_refs(v, document) for v in value]
    if isinstance(value, dict):
        return {k: expand_refs(v, document) for k, v in value.items()}
    return value


def _same(actual: Any, expected: Any) -> bool:
    if actual is MISSING:
        return False
    # JSON has one number type; 3 and 3.0 are the same observation.
    if isinstance(actual, bool) or isinstance(expected, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual is expected
    return bool(actual == expected)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def derive_worker_fields(observations: dict[str, Any] | None) -> dict[str, Any]:
    """Adds convenience fields to the worker's observations.

    - ``all_rpcs``: every RPC of every connection, in order;
    - ``connection_count``;
    - ``handshakes_completed``: connections whose TLS handshake finished;
    - ``open_connection_count``: connections of the case the worker still holds open.
    """
    obs = dict(observations or {})
    connections = obs.get("connections") or []
    obs["all_rpcs"] = [rpc for c in connections for rpc in (c.get("rpcs") or [])]
    obs["connection_count"] = len(connections)
    obs["handshakes_completed"] = sum(1 for c in connections if c.get("handshake_completed"))
    obs["open_connection_count"] = sum(1 for c in connections if not c.get("closed", False))
    obs.setdefault("rpc_calls", {})
    return obs
