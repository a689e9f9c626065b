"""What the worker saw during a case, read over its fault channel (docs/fault-control.md).

A case may span several worker lifetimes (a restart between segments or at a sync point);
each lifetime's observations are read before it ends and merged into one record, which
the assertions' ``worker.*`` fields are derived from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .results import CaseResult
    from .worker import ManagedWorker


def observe(worker: ManagedWorker | None, result: CaseResult, end: bool = False) -> dict[str, Any]:
    """What the worker's current lifetime saw (``end``: and the case ends on the worker);
    a channel that cannot answer becomes a detail of ``result``."""
    if worker is None or worker.control is None:
        return {}
    try:
        observations = worker.control.observations()
        if end:
            worker.control.end_case()
        return observations
    except Exception as exc:
        result.details.append(f"worker observations unavailable: {exc}")
        return {}


def merge_observations(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Combines the observations of two worker lifetimes within one case."""
    if not a:
        return dict(b)
    if not b:
        return dict(a)
    calls = dict(a.get("rpc_calls", {}))
    for name, count in b.get("rpc_calls", {}).items():
        calls[name] = calls.get(name, 0) + count
    return {
        "connections": list(a.get("connections", [])) + list(b.get("connections", [])),
        "rpc_calls": calls,
        "watch_cursors": list(a.get("watch_cursors", [])) + list(b.get("watch_cursors", [])),
        "bearer_seen": bool(a.get("bearer_seen")) or bool(b.get("bearer_seen")),
        "silent_closes": int(a.get("silent_closes", 0)) + int(b.get("silent_closes", 0)),
        "shutdowns": int(a.get("shutdowns", 0)) + int(b.get("shutdowns", 0)),
    }
