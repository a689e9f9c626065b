"""Run streams, idempotency claims, owner indexes and plans in the journal.

Stream names:

* ``run:<run_id>``: version 1 is the creation record (request, authority
  snapshot, initial projection); version ``n + 1`` holds event sequence ``n``.
* ``owner:<application_id>``: one record per accepted run, in creation order.
* ``idem:<application_id>:<key>``: the single claim of an idempotency key.
* ``plan:<plan_id>``: the revisions and statuses of one plan.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grpclib.const import Status

from ..errors import ApiError, JournalIntegrityError
from ..journal import ConcurrencyConflict, Journal, Record
from .model import Event, State, apply, initial_state, is_reserved, replay_check


class EventLimitReached(Exception):
    """The run has used its ordinary (or, for lifecycle events, its whole) budget."""


def now_us() -> int:
    return time.time_ns() // 1000


@dataclass
class RunTail:
    """What the cheap path knows: the creation record and the verified tail."""

    creation: dict[str, Any]
    head: Record
    state: State


@dataclass
class FullRun:
    """A fully verified run: creation, every event, and the replayed state."""

    creation: dict[str, Any]
    events: list[dict[str, Any]]
    state: State


class RunStore:
    def __init__(self, journal: Journal, max_events: int, reserved: int) -> None:
        self._journal = journal
        self.max_events = max_events
        self.reserved = reserved

    # --- idempotency and creation -------------------------------------------------

    def claim(self, application_id: str, key: str) -> dict[str, Any] | None:
        rec = self._journal.record(f"idem:{application_id}:{key}", 1)
        return None if rec is None else rec.payload

    def create(self, creation: dict[str, Any], plan_update: dict[str, Any] | None) -> None:
        """Claim the key, store the run and index it in one transaction."""
        app = creation["application_id"]
        run_id = creation["run_id"]
        with self._journal.transaction():
            self._journal.append(
                f"idem:{app}:{creation['idempotency_key']}",
                1,
                "idempotency.claimed",
                {"run_id": run_id, "fingerprint": creation["fingerprint"]},
                None,
            )
            self._journal.append(f"run:{run_id}", 1, "run.created", creation, None)
            owner = f"owner:{app}"
            head = self._journal.head(owner)
            self._journal.append(
                owner,
                1 if head is None else head.version + 1,
                "owner.indexed",
                {"run_id": run_id, "time": creation["create_time"]},
                head,
            )
            if plan_update is not None:
                stream = f"plan:{plan_update['plan_id']}"
                plan_head = self._journal.head(stream)
                self._journal.append(
                    stream,
                    1 if plan_head is None else plan_head.version + 1,
                    "plan.revision",
                    plan_update,
                    plan_head,
                )

    # --- plans ----------------------------------------------------------------------

    def plan_state(self, plan_id: str) -> dict[str, Any] | None:
        head = self._journal.head(f"plan:{plan_id}")
        return None if head is None else head.payload

    # --- the cheap path (W12) -----------------------------------------------------------

    def tail(self, run_id: str) -> RunTail | None:
        stream = f"run:{run_id}"
        first = self._journal.record(stream, 1)
        if first is None:
            return None
        creation = first.payload
        records = self._journal.tail(stream, 2)
        if not records:
            raise JournalIntegrityError("run stream lost its records")
        head = records[-1]
        if head.version == 1:
            return RunTail(creation, head, creation["state"])
        payload = head.payload
        before = creation["state"] if records[0].version == 1 else records[0].payload["state"]
        if len(records) == 2:
            replay_check(before, payload)
        return RunTail(creation, head, payload["state"])

    @property
    def journal(self) -> Journal:
        """The journal holding every stream (for worker-level records)."""
        return self._journal

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """Commit several appends (of one or more runs) together or not at all."""
        return self._journal.transaction()

    def append(
        self,
        run_id: str,
        event: Event,
        *,
        pc: int | None = None,
        private: dict[str, Any] | None = None,
        expected: RunTail | None = None,
    ) -> tuple[dict[str, Any], State]:
        """Append one event after the verified tail, with optimistic concurrency."""
        tail = expected or self.tail(run_id)
        if tail is None:
            raise ApiError(Status.NOT_FOUND, "RUN_NOT_FOUND", "run not found")
        state = tail.state
        seq = state["last_sequence"] + 1
        budget = self.max_events + (self.reserved if is_reserved(event) else 0)
        if seq > budget:
            raise EventLimitReached(run_id)
        time_us = max(now_us(), state["update_time"])
        new_state = apply(state, event, time_us, pc)
        payload: dict[str, Any] = {"seq": seq, "time": time_us, "event": event, "state": new_state}
        if pc is not None:
            payload["pc"] = pc
        if private:
            payload["private"] = private
        try:
            self._journal.append(f"run:{run_id}", tail.head.version + 1, "run.event", payload, tail.head)
        except ConcurrencyConflict:
            raise ApiError(
                Status.UNAVAILABLE, "UNAVAILABLE", "the run changed concurrently; try again"
            ) from None
        return payload, new_state

    # --- full, verified reads --------------------------------------------------------------

    def full(self, run_id: str, with_events: bool = True) -> FullRun | None:
        records = self._journal.read_stream(f"run:{run_id}")
        first = next(records, None)
        if first is None:
            return None
        creation = first.payload
        state: State = initial_state(creation["create_time"])
        if creation["state"] != state:
            raise JournalIntegrityError("creation record carries a foreign projection")
        events: list[dict[str, Any]] = []
        for rec in records:
            payload = rec.payload
            if payload.get("seq") != rec.version - 1:
                raise JournalIntegrityError("event sequence does not match its position")
            state = replay_check(state, payload)
            if with_events:
                events.append(payload)
        return FullRun(creation, events, state)

    def events_after_iter(self, run_id: str, after: Record | None) -> Iterator[Record]:
        """Verified records following ``after`` (watches keep the chain as they go)."""
        return self._journal.read_stream(f"run:{run_id}", start_after=after)

    def event_record(self, run_id: str, seq: int) -> dict[str, Any] | None:
        """The stored payload of event ``seq`` (its own hash checked)."""
        rec = self._journal.record(f"run:{run_id}", seq + 1)
        return None if rec is None else rec.payload

    # --- owner index ---------------------------------------------------------------------------

    def owner_head(self, application_id: str) -> Record | None:
        return self._journal.head(f"owner:{application_id}")

    def owner_record(self, application_id: str, version: int) -> Record | None:
        return self._journal.record(f"owner:{application_id}", version)

    def owner_range(self, application_id: str, first: int, last: int) -> list[Record]:
        return self._journal.range(f"owner:{application_id}", first, last)

    def all_run_ids(self) -> list[str]:
        return [s.removeprefix("run:") for s in self._journal.streams_with_prefix("run:", "run.created")]

