"""The watch state machine (S1), with no I/O.

The sync and async drivers feed it what the stream does; it answers what to do next.
It keeps only the cursor, a bounded window of recently delivered events (to tell an exact
replay from an altered one), and a reconnect budget, so memory is constant however long
the run is.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from ._errors import ProtocolViolationError, WatchGapError
from ._models import Run
from ._options import RetryPolicy

REPLAY_WINDOW = 1024
"""How many delivered events are remembered for replay comparison."""

C = TypeVar("C", bound=Hashable)


class Verdict(enum.Enum):
    """What the driver does with one received event."""

    DELIVER = 1
    DROP = 2


class CloseAction(enum.Enum):
    """What the driver does after ``GetRun`` reconciled a clean close."""

    COMPLETE = 1
    RESUME = 2


# Enum members are looked up through a descriptor (~0.1 us each); the per-event path uses
# these module constants instead.
DELIVER = Verdict.DELIVER
DROP = Verdict.DROP


@dataclass(frozen=True, slots=True)
class Resume:
    """Reconnect after ``delay`` seconds with ``after_sequence``."""

    delay: float
    after_sequence: int
    attempt: int


class WatchCore(Generic[C]):
    """Dedup, gap detection, clean-close reconciliation and the reconnect budget.

    ``content`` is any equality-comparable value standing for an event's full content
    (the driver passes the decoded message, whose ``==`` compares every field).
    """

    __slots__ = (
        "_attempt",
        "_delays",
        "_policy",
        "_progressed",
        "_recent",
        "_terminal_sequence",
        "last_sequence",
        "run_id",
    )

    def __init__(self, run_id: str, after_sequence: int, policy: RetryPolicy) -> None:
        self.run_id = run_id
        self.last_sequence = after_sequence
        self._policy = policy
        # Delivered sequences are contiguous, so the window is exactly the last
        # REPLAY_WINDOW sequences up to last_sequence.
        self._recent: dict[int, C] = {}
        self._terminal_sequence: int | None = None
        self._attempt = 0
        self._delays: Iterator[float] = policy.delays()
        self._progressed = False

    @property
    def finished_stream(self) -> bool:
        """True once the terminal event was delivered."""
        return self._terminal_sequence is not None

    def on_event(self, run_id: str, sequence: int, content: C, *, terminal: bool) -> Verdict:
        """Classifies one received event; raises on a contract violation."""
        # The common case first: the next sequence of this run, before the terminal event.
        # It passes every check below, so it is recorded exactly as the slow path would.
        if (
            sequence == self.last_sequence + 1
            and self._terminal_sequence is None
            and run_id == self.run_id
        ):
            recent = self._recent
            recent[sequence] = content
            recent.pop(sequence - REPLAY_WINDOW, None)
            self.last_sequence = sequence
            if terminal:
                self._terminal_sequence = sequence
            self._progressed = True
            return DELIVER
        if run_id != self.run_id:
            raise ProtocolViolationError(
                "the watch delivered an event of another run", reason="WATCH_WRONG_RUN"
            )
        if sequence <= self.last_sequence:
            seen = self._recent.get(sequence)
            if seen is None:
                # Older than the replay window, or at/before a cursor the caller supplied:
                # its content cannot be compared, so it cannot be accepted as a replay.
                raise ProtocolViolationError(
                    f"the watch re-sent sequence {sequence}, which cannot be verified "
                    f"(cursor {self.last_sequence})",
                    reason="WATCH_REPLAY_UNVERIFIABLE",
                )
            if seen != content:
                raise ProtocolViolationError(
                    f"the watch replayed sequence {sequence} with different content",
                    reason="WATCH_REPLAY_ALTERED",
                )
            return Verdict.DROP
        if self._terminal_sequence is not None:
            raise ProtocolViolationError(
                "the watch sent an event after the terminal event", reason="WATCH_AFTER_TERMINAL"
            )
        if sequence != self.last_sequence + 1:
            raise WatchGapError(
                f"the watch skipped from sequence {self.last_sequence} to {sequence}",
                reason="WATCH_GAP",
                metadata={"expected": str(self.last_sequence + 1), "received": str(sequence)},
            )
        recent = self._recent
        recent[sequence] = content
        recent.pop(sequence - REPLAY_WINDOW, None)
        self.last_sequence = sequence
        if terminal:
            self._terminal_sequence = sequence
        # Progress refills the reconnect budget (applied at the next failure).
        self._progressed = True
        return Verdict.DELIVER

    def on_retryable_failure(self) -> Resume | None:
        """A retryable transport failure: the next reconnect, or ``None`` when exhausted."""
        if self._progressed:
            self._progressed = False
            self._attempt = 0
            self._delays = self._policy.delays()
        delay = next(self._delays, None)
        if delay is None:
            return None
        self._attempt += 1
        return Resume(delay=delay, after_sequence=self.last_sequence, attempt=self._attempt)

    def on_clean_close(self, run: Run) -> CloseAction:
        """Reconciles a stream that ended with OK against ``GetRun`` (S1).

        Complete only when the same run is terminal exactly at the delivered cursor; resume
        when it is still running and has not gone backwards; fail otherwise.
        """
        if run.run_id != self.run_id:
            raise ProtocolViolationError(
                "GetRun returned another run while reconciling a watch",
                reason="WATCH_RECONCILE_MISMATCH",
            )
        if run.status.is_terminal:
            if run.last_sequence == self.last_sequence:
                return CloseAction.COMPLETE
            raise ProtocolViolationError(
                f"the watch closed at sequence {self.last_sequence} but the run ended at "
                f"{run.last_sequence}",
                reason="WATCH_RECONCILE_MISMATCH",
                metadata={"delivered": str(self.last_sequence), "run": str(run.last_sequence)},
            )
        if run.last_sequence < self.last_sequence or self._terminal_sequence is not None:
            raise ProtocolViolationError(
                "the run's state contradicts the events the watch delivered",
                reason="WATCH_RECONCILE_MISMATCH",
            )
        return CloseAction.RESUME
