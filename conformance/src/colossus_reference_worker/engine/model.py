"""The run state machine and its replay rules.

Each event record of a run stream embeds the run's public projection *after*
that event (``state``). The cheap mutation path trusts the tail's embedded
projection once its hash and link check out; a full read replays every event
with :func:`apply` and requires each embedded projection to equal the
replayed one, so the fast path never replaces chain verification.
"""

from __future__ import annotations

from typing import Any

from ..errors import JournalIntegrityError

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED", "OUTCOME_UNKNOWN"})
ACTIVE = frozenset({"QUEUED", "RUNNING", "WAITING_FOR_INPUT", "CANCELLING"})
STATUSES = ("QUEUED", "RUNNING", "WAITING_FOR_INPUT", "CANCELLING", *sorted(TERMINAL))

# Action classes whose STARTED activity may have an effect outside the worker.
EFFECT_CLASSES = frozenset(
    {"WRITE", "EXECUTE", "NETWORK", "ADMINISTRATION", "DELEGATION", "LOCAL_STATE"}
)

# Event types that may use the reserved lifecycle budget.
RESERVED_TYPES = frozenset({"interaction_resolved", "terminated"})

State = dict[str, Any]
Event = dict[str, Any]


def initial_state(create_time: int) -> State:
    return {
        "status": "QUEUED",
        "last_sequence": 0,
        "update_time": create_time,
        "pending": None,
        "result": None,
        "output_bytes": 0,
        "effect": False,
        "pc": 0,
    }


def is_reserved(event: Event) -> bool:
    """Whether ``event`` may use the reserved lifecycle budget."""
    if event["type"] in RESERVED_TYPES:
        return True
    return bool(event["type"] == "status" and event["status"] == "CANCELLING")


def apply(state: State, event: Event, time_us: int, pc: int | None) -> State:
    """The state after ``event``; raises ``ValueError`` for an illegal transition."""
    if state["status"] in TERMINAL:
        raise ValueError("run is terminal")
    kind = event["type"]
    if state["pending"] is not None and kind not in RESERVED_TYPES:
        raise ValueError("only the pending interaction's resolution may follow it")
    # Nested values (pending, result) are replaced, never mutated, so a shallow copy is safe.
    new = dict(state)
    if kind == "status":
        if event["previous"] != state["status"]:
            raise ValueError("status transition does not start from the current status")
        new["status"] = event["status"]
    elif kind == "output":
        new["output_bytes"] += len(event["text"].encode())
    elif kind == "interaction_requested":
        if state["pending"] is not None:
            raise ValueError("an interaction is already pending")
        new["pending"] = event["interaction"]
    elif kind == "interaction_resolved":
        pending = state["pending"]
        if pending is None or pending["id"] != event["interaction_id"]:
            raise ValueError("no such pending interaction")
        new["pending"] = None
    elif kind == "tool":
        if event["phase"] == "STARTED" and event["action_class"] in EFFECT_CLASSES:
            new["effect"] = True
    elif kind == "terminated":
        if event["status"] not in TERMINAL:
            raise ValueError("termination needs a terminal status")
        new["status"] = event["status"]
        new["result"] = event["result"]
        new["pending"] = None
    else:
        raise ValueError(f"unknown event type {kind}")
    new["last_sequence"] = state["last_sequence"] + 1
    new["update_time"] = time_us
    if pc is not None:
        new["pc"] = pc
    return new


def replay_check(state: State, record_payload: dict[str, Any]) -> State:
    """Replay one stored event onto ``state`` and cross-check its embedded projection."""
    try:
        replayed = apply(
            state, record_payload["event"], record_payload["time"], record_payload.get("pc")
        )
    except (KeyError, ValueError) as exc:
        raise JournalIntegrityError(f"impossible transition in journal: {exc}") from None
    if replayed != record_payload["state"]:
        raise JournalIntegrityError("embedded projection disagrees with replay")
    return replayed
