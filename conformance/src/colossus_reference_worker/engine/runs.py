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
import logging
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grpclib.const import Status

from ..errors import ApiError, JournalIntegrityError
from ..journal import ConcurrencyConflict, Journal, Record
from .model import TERMINAL, Event, State, apply, initial_state, is_reserved, replay_check

log = logging.getLogger(__name__)


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


# How many runs keep a verification checkpoint (least recently read dropped first).
CHECKPOINTS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A run verified from its creation record up to ``last`` while the journal's
    trust epoch was ``epoch``: later reads check only what follows ``last``."""

    epoch: int
    last: Record
    creation: dict[str, Any]
    state: State


class RunStore:
    def __init__(self, journal: Journal, max_events: int, reserved: int) -> None:
        self._journal = journal
        self._checkpoints: OrderedDict[str, Checkpoint] = OrderedDict()
        if journal.open_index_created:
            journal.open_index_created = False
            self._index_open_runs()
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
            first = self._journal.append(f"run:{run_id}", 1, "run.created", creation, None)
            self._journal.mark_open(f"run:{run_id}", True)
            # We wrote it, so it is verified: GetRun and watches start from here.
            # (Both from the stored JSON, exactly as a read would see them.)
            self._journal.after_commit(lambda: self._remember(run_id, Checkpoint(
                self._journal.trust_epoch(), first, first.payload, first.payload["state"])))
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
            with self._journal.transaction():
                rec = self._journal.append(f"run:{run_id}", tail.head.version + 1, "run.event",
                                           payload, tail.head)
                if new_state["status"] in TERMINAL:
                    self._journal.mark_open(f"run:{run_id}", False)
                self._journal.after_commit(lambda: self._advance(run_id, tail.head, rec))
        except ConcurrencyConflict:
            raise ApiError(
                Status.UNAVAILABLE, "UNAVAILABLE", "the run changed concurrently; try again"
            ) from None
        return payload, new_state

    # --- full, verified reads --------------------------------------------------------------

    def full(self, run_id: str, with_events: bool = True) -> FullRun | None:
        """The run verified to its sealed head.

        Without events, a run verified before (and unchanged from outside since)
        is checked only beyond its :class:`Checkpoint`, so the cost follows the
        tail; with events every record is read and checked again.
        """
        checked = self.checked(run_id, with_events)
        return None if checked is None else checked[0]

    def checked(self, run_id: str, with_events: bool = False) -> tuple[FullRun, Record] | None:
        """:meth:`full` and the newest verified record (its hash anchors cached replies)."""
        if not with_events and (trusted := self.trusted(run_id)) is not None:
            return FullRun(trusted.creation, [], trusted.state), trusted.last
        stream = f"run:{run_id}"
        epoch = self._journal.trust_epoch()
        mark = None if with_events else self._checkpoints.get(run_id)
        if mark is not None and mark.epoch == epoch:
            self._checkpoints.move_to_end(run_id)
            records = self._journal.read_stream(stream, start_after=mark.last)
            creation, state, last = mark.creation, mark.state, mark.last
        else:
            records = self._journal.read_stream(stream)
            first = next(records, None)
            if first is None:
                return None
            creation, last = first.payload, first
            state = initial_state(creation["create_time"])
            if creation["state"] != state:
                raise JournalIntegrityError("creation record carries a foreign projection")
        events: list[dict[str, Any]] = []
        for rec in records:
            payload = rec.payload
            if payload.get("seq") != rec.version - 1:
                raise JournalIntegrityError("event sequence does not match its position")
            state = replay_check(state, payload)
            last = rec
            if with_events:
                events.append(payload)
        if not self._journal.in_transaction:  # a rollback could still take these back
            self._remember(run_id, Checkpoint(epoch, last, creation, state))
        return FullRun(creation, events, state), last

    def _advance(self, run_id: str, prev: Record, rec: Record) -> None:
        """Move the run's checkpoint over a record this process has just committed.

        Only a checkpoint that ends exactly at ``prev`` and belongs to the current
        trust epoch moves (the transaction counted any outside change before it
        wrote); anything else is left for the next read to verify. The stored event
        is replayed onto the checkpoint's state, as a read would.
        """
        mark = self._checkpoints.get(run_id)
        if (mark is None or mark.last.hash != prev.hash or mark.last.version != prev.version
                or mark.epoch != self._journal.trust_epoch()):
            return
        payload = rec.payload
        try:
            if payload.get("seq") != rec.version - 1:
                raise JournalIntegrityError("event sequence does not match its position")
            state = replay_check(mark.state, payload)
        except JournalIntegrityError:
            self._checkpoints.pop(run_id, None)
            return
        self._checkpoints[run_id] = Checkpoint(mark.epoch, rec, mark.creation, state)

    def trusted(self, run_id: str) -> Checkpoint | None:
        """The run's checkpoint, if it still stands for the whole run.

        That is: nothing outside this process changed the journal since it was
        verified (the trust epoch), and the run's sealed head is still the
        checkpoint's record, so no record follows it. GetRun answers from it
        without reading a single record.
        """
        mark = self._checkpoints.get(run_id)
        if mark is None or mark.epoch != self._journal.trust_epoch():
            return None
        if self._journal.sealed_head(f"run:{run_id}") != (mark.last.version, mark.last.hash):
            return None
        self._checkpoints.move_to_end(run_id)
        return mark

    def _remember(self, run_id: str, mark: Checkpoint) -> None:
        self._checkpoints[run_id] = mark
        self._checkpoints.move_to_end(run_id)
        while len(self._checkpoints) > CHECKPOINTS_KEPT:
            self._checkpoints.popitem(last=False)

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

    def live_run_ids(self) -> list[str]:
        """Runs not yet terminal, oldest first, from the index kept with every append
        (start-up recovery; rebuilt from the records first if it was altered)."""
        if not self._journal.open_index_intact():
            # The records are sealed and the index is derived from them: rebuild it, so
            # recovery still settles every unfinished run (W13), and say so loudly.
            log.error("the journal's index of unfinished runs was altered outside the "
                      "worker; rebuilding it from the records")
            self._journal.reset_open_index()
            self._index_open_runs()
        return [s.removeprefix("run:") for s in self._journal.open_streams("run:")]

    def _index_open_runs(self) -> None:
        """Fill the open-run index of a journal written before it existed (one full scan)."""
        with self._journal.transaction():
            for run_id in self.all_run_ids():
                try:
                    tail = self.tail(run_id)
                    finished = tail is not None and tail.state["status"] in TERMINAL
                except JournalIntegrityError:
                    finished = False  # start-up recovery reports it
                if not finished:
                    self._journal.mark_open(f"run:{run_id}", True)

    def all_run_ids(self) -> list[str]:
        return [s.removeprefix("run:") for s in self._journal.streams_with_prefix("run:", "run.created")]

