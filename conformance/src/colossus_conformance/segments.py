"""A case's steps cut into what one instruction can carry.

A client executes one instruction at a time and knows only its steps. The runner cuts a
case at its runner actions (a worker restart between two client segments) and, in a
cross-SDK case, wherever the step's SDK role changes; values reported by earlier segments
are filled in by the runner before the next one is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import assertions

RUNNER_OPS = frozenset({"restart_worker"})


@dataclass
class Segment:
    """Either a run of client steps (of one role in a cross-SDK case) or one runner action."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    action: dict[str, Any] | None = None
    role: str | None = None


def split_segments(steps: list[dict[str, Any]], by_role: bool = False) -> list[Segment]:
    """Cuts a case's steps at runner actions (and, ``by_role``, where the step's SDK role
    changes); each client segment is one instruction."""
    segments: list[Segment] = []
    current: list[dict[str, Any]] = []
    role: str | None = None
    for step in steps:
        if step["op"] in RUNNER_OPS:
            if current:
                segments.append(Segment(steps=current, role=role))
                current = []
            segments.append(Segment(action=step))
            continue
        step_role = step.get("sdk") if by_role else None
        if current and step_role != role:
            segments.append(Segment(steps=current, role=role))
            current = []
        role = step_role
        current.append(step)
    if current:
        segments.append(Segment(steps=current, role=role))
    return segments


def without_role(step: dict[str, Any]) -> dict[str, Any]:
    """The step as a client sees it: the runner-side ``sdk`` role removed."""
    return {k: v for k, v in step.items() if k != "sdk"}


def resolve_earlier(value: Any, reports: dict[str, dict[str, Any]]) -> Any:
    """Resolves ``$step.path`` references to steps of earlier segments.

    A client only knows the steps of the instruction it is executing, so the
    runner fills in values reported in earlier segments itself. Unresolvable
    references are left for the client to report.
    """
    if isinstance(value, str) and value.startswith("$") and value[1:].split(".")[0] in reports:
        document = {"steps": reports}
        resolved = assertions.resolve(document, assertions.ref_to_path(value))
        return value if resolved is assertions.MISSING or resolved is None else resolved
    if isinstance(value, list):
        return [resolve_earlier(v, reports) for v in value]
    if isinstance(value, dict):
        return {k: resolve_earlier(v, reports) for k, v in value.items()}
    return value
