"""Start-up recovery (W13): settle or resume what an unclean stop left behind.

* ``QUEUED`` runs, and ``RUNNING`` runs that recorded no effect, resume at
  their next script step under the grant captured when they were accepted;
* ``WAITING_FOR_INPUT`` runs close their interaction and become ``INTERRUPTED``
  (after a *graceful* stop, recorded by :func:`mark_clean_stop`, they keep
  waiting on the same interaction instead);
* ``CANCELLING`` runs become ``CANCELLED``;
* runs that may have started an effect become ``OUTCOME_UNKNOWN``.

Only runs in the open-run index (kept with every append) are visited, so the
cost follows unfinished work, not history. Each is read in full (and so
verified, which also sets its read checkpoint); one that fails verification is
logged and left unreadable instead of stopping the worker.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any, Protocol

from ..errors import JournalIntegrityError
from .model import TERMINAL, Event
from .runs import RunStore, now_us

log = logging.getLogger(__name__)


class RecoveryHost(Protocol):
    """What recovery uses of the engine (``RunEngine``), named here so this module needs no
    import of the engine, which imports it."""

    store: RunStore
    active: dict[str, set[str]]

    def append(self, run_id: str, event: Event, *, pc: int | None = None,
               private: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def terminate(self, run_id: str, status: str, result: dict[str, Any]) -> None: ...

    def _start_driver(self, creation: dict[str, Any], pc: int, output: str = "") -> None: ...


# One record per start and per graceful stop; the head says how the last process ended.
LIFECYCLE_STREAM = "worker:lifecycle"


def _last_stop_was_clean(engine: RecoveryHost) -> bool:
    """Whether the previous process stopped gracefully; records this start first.

    The start is recorded before any run is touched, so a crash during recovery
    or serving leaves a head that says "unclean" to the next start.
    """
    journal = engine.store.journal
    head = journal.head(LIFECYCLE_STREAM)
    clean = head is not None and head.kind == "worker.stopped"
    journal.append(LIFECYCLE_STREAM, 1 if head is None else head.version + 1,
                   "worker.started", {"time": now_us()}, head)
    return clean


def mark_clean_stop(engine: RecoveryHost) -> None:
    """Record a graceful stop; call after the last run append of this process."""
    journal = engine.store.journal
    head = journal.head(LIFECYCLE_STREAM)
    journal.append(LIFECYCLE_STREAM, 1 if head is None else head.version + 1,
                   "worker.stopped", {"time": now_us()}, head)


def recover(engine: RecoveryHost) -> dict[str, int]:
    """Settle or resume every run a previous process left non-terminal."""
    counts: dict[str, int] = defaultdict(int)
    clean = _last_stop_was_clean(engine)
    for run_id in engine.store.live_run_ids():
        try:
            counts[_recover_one(engine, run_id, clean)] += 1
        except JournalIntegrityError:
            # Loud, but contained: every read of this run fails with DATA_LOSS.
            log.error("run %s failed journal verification; it is left unreadable", run_id)
            counts["integrity_failures"] += 1
    counts.pop("terminal", None)
    return dict(counts)

def _recover_one(engine: RecoveryHost, run_id: str, clean: bool) -> str:
    tail = engine.store.tail(run_id)
    assert tail is not None
    status = tail.state["status"]
    if status in TERMINAL:
        return "terminal"
    full = engine.store.full(run_id)
    assert full is not None
    creation, state = full.creation, full.state
    output = "".join(e["event"]["text"] for e in full.events
                     if e["event"]["type"] == "output")
    partial: dict[str, Any] = {"output_text": output}
    if creation.get("plan"):
        partial["plan"] = {**creation["plan"], "status": "DRAFT"}
    app = creation["application_id"]
    if status == "QUEUED" or (status == "RUNNING" and not state["effect"]):
        engine.active[app].add(run_id)
        engine._start_driver(creation, state["pc"], output)
        return "resumed"
    if status == "WAITING_FOR_INPUT" and clean and state["pending"] is not None:
        # A graceful stop: the question is still open and can still be answered.
        engine.active[app].add(run_id)
        engine._start_driver(creation, state["pc"], output)
        return "waiting"
    if status == "WAITING_FOR_INPUT":
        if state["pending"] is not None:
            engine.append(run_id, {"type": "interaction_resolved",
                                 "interaction_id": state["pending"]["id"],
                                 "outcome": "INTERRUPTED"})
        engine.terminate(run_id, "INTERRUPTED", partial)
        return "interrupted"
    if status == "CANCELLING":
        engine.terminate(run_id, "CANCELLED", partial)
        return "cancelled"
    engine.terminate(run_id, "OUTCOME_UNKNOWN", partial)
    return "outcome_unknown"
