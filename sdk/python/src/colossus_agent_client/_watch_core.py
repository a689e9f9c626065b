"""The watch state machine (S1), with no I/O.

The sync and async drivers feed it what the stream does; it answers what to do next.
It keeps only the cursor, a bounded window of recently delivered events (to tell an exact
replay from an altered one), and a reconnect budget, so memory is constant however long
the run is and however large its events are.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from ._errors import ProtocolViolationError, WatchGapError
from ._models import Run
from ._options import RetryPolicy

REPLAY_WINDOW = 1024
"""At most this many delivered events are remembered for replay comparison..."""
REPLAY_WINDOW_BYTES = 8 * 1024 * 1024
"""...and at most this many bytes of them (encoded size); the newest event always stays."""

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
    ready_timeout: float | None = None
    """How long, after ``delay``, the driver may wait for the worker to be reachable again
    (what is left of the policy's ``max_elapsed``; ``None``: no limit)."""


class WatchCore(Generic[C]):
    """Dedup, gap detection, clean-close reconciliation and the reconnect budget.

    ``content`` is any equality-comparable value standing for an event's full content
    (the drivers pass the event's encoded bytes, which cost nothing to keep or to size).
    Two contents that differ with ``!=`` are still the same event when ``equivalent``
    says so: for encodings, when both decode to equal messages (an encoder may order
    fields differently). Without ``equivalent``, ``!=`` alone decides.

    ``size_of`` gives a content's size (``len`` for encodings, where each event's ``size``
    is its length); with it the window counts its bytes lazily (see ``_remember``).
    Without it, the ``size`` passed with each event is recorded beside it.
    """

    __slots__ = (
        "_attempt",
        "_contents",
        "_counted",
        "_delays",
        "_equivalent",
        "_first_failure",
        "_max_bytes",
        "_max_events",
        "_policy",
        "_progressed",
        "_room",
        "_size_of",
        "_sizes",
        "_terminal_sequence",
        "_window_bytes",
        "last_sequence",
        "run_id",
    )

    def __init__(
        self,
        run_id: str,
        after_sequence: int,
        policy: RetryPolicy,
        *,
        max_events: int = REPLAY_WINDOW,
        max_bytes: int = REPLAY_WINDOW_BYTES,
        equivalent: Callable[[C, C], bool] | None = None,
        size_of: Callable[[C], int] | None = None,
    ) -> None:
        self.run_id = run_id
        self._equivalent = equivalent
        self.last_sequence = after_sequence
        self._policy = policy
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        # Delivered sequences are contiguous, so the window is the last len(_contents)
        # sequences up to last_sequence, oldest first. The deque drops its oldest entry by
        # itself once max_events are kept. Without size_of, _sizes holds their sizes in
        # the same order and _window_bytes their sum.
        self._contents: deque[C] = deque(maxlen=max_events)
        self._sizes: deque[int] = deque(maxlen=max_events)
        self._window_bytes = 0
        self._size_of = size_of
        # With size_of: the bytes that may still be appended with no accounting at all,
        # or -1 while every event is counted (see _remember).
        self._room = max_bytes if size_of is not None else -1
        self._counted = size_of is None
        self._max_events = max_events
        self._max_bytes = max_bytes
        self._first_failure: float | None = None
        self._terminal_sequence: int | None = None
        self._attempt = 0
        self._delays: Iterator[float] = policy.delays()
        self._progressed = False

    @property
    def remembered_sequences(self) -> range:
        """The delivered sequences whose content a replay is compared with, oldest first."""
        return range(self.last_sequence - len(self._contents) + 1, self.last_sequence + 1)

    @property
    def finished_stream(self) -> bool:
        """True once the terminal event was delivered."""
        return self._terminal_sequence is not None

    def _remember(self, content: C, size: int) -> None:
        """Appends ``content`` to the window, counting its bytes exactly.

        With ``size_of`` the driver's common path appends without any accounting while
        ``_room`` (the byte bound minus the window's bytes at the last count, minus what
        was appended since) stays non-negative: evictions only free bytes, so the window
        cannot exceed the bound then. Once it would, this counts the window again and
        drops the oldest events exactly as per-event accounting would have. While the
        window holds more than half the bound, every event is counted (``_room`` -1), so
        large events never recount the whole window each time.
        """
        contents, size_of, max_bytes = self._contents, self._size_of, self._max_bytes
        full = len(contents) == self._max_events  # the oldest leaves as this one comes
        if size_of is None:
            sizes = self._sizes
            window = self._window_bytes + size - (sizes[0] if full else 0)
            contents.append(content)
            sizes.append(size)
            while window > max_bytes and len(sizes) > 1:
                window -= sizes.popleft()
                contents.popleft()
            self._window_bytes = window
            return
        if self._counted:
            window = self._window_bytes + size - (size_of(contents[0]) if full else 0)
        else:
            window = sum(map(size_of, contents)) + size - (size_of(contents[0]) if full else 0)
        contents.append(content)
        while window > max_bytes and len(contents) > 1:
            window -= size_of(contents.popleft())
        self._window_bytes = window
        self._counted = 2 * window > max_bytes
        self._room = -1 if self._counted else max_bytes - window

    def _recall(self, sequence: int) -> C | None:
        """The remembered content of an already delivered ``sequence``, if still kept."""
        contents = self._contents
        offset = sequence - self.last_sequence + len(contents) - 1
        return contents[offset] if offset >= 0 else None

    def admit_next(self, run_id: str, sequence: int, content: C, size: int) -> bool:
        """Records the common event: the next sequence of this run, before the terminal event.

        True when it was recorded (deliver it); False when it is anything else, which only
        :meth:`on_event` classifies. A non-terminal event takes this path from the drivers
        without the rest of ``on_event``'s checks, all of which it would pass.
        """
        if (
            sequence == self.last_sequence + 1
            and self._terminal_sequence is None
            and run_id == self.run_id
        ):
            room = self._room - size
            if room >= 0:  # the byte bound cannot be reached yet (see _remember)
                self._contents.append(content)
                self._room = room
            else:
                self._remember(content, size)
            self.last_sequence = sequence
            # Progress refills the reconnect budget (applied at the next failure).
            self._progressed = True
            return True
        return False

    def on_event(
        self, run_id: str, sequence: int, content: C, *, terminal: bool, size: int = 0
    ) -> Verdict:
        """Classifies one received event of ``size`` encoded bytes; raises on a violation."""
        if not terminal and self.admit_next(run_id, sequence, content, size):
            return DELIVER
        if run_id != self.run_id:
            raise ProtocolViolationError(
                "the watch delivered an event of another run", reason="WATCH_WRONG_RUN"
            )
        if sequence <= self.last_sequence:
            seen = self._recall(sequence)
            if seen is None:
                # Older than the replay window, or at/before a cursor the caller supplied:
                # its content cannot be compared, so it cannot be accepted as a replay.
                raise ProtocolViolationError(
                    f"the watch re-sent sequence {sequence}, which cannot be verified "
                    f"(cursor {self.last_sequence})",
                    reason="WATCH_REPLAY_UNVERIFIABLE",
                )
            if seen != content and not (
                self._equivalent is not None and self._equivalent(seen, content)
            ):
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
        self._remember(content, size)
        self.last_sequence = sequence
        if terminal:
            self._terminal_sequence = sequence
        # Progress refills the reconnect budget (applied at the next failure).
        self._progressed = True
        return Verdict.DELIVER

    def on_retryable_failure(self, now: float | None = None) -> Resume | None:
        """A retryable transport failure: the next reconnect, or ``None`` when exhausted.

        Both budgets restart when an event was delivered since the previous failure: the
        attempt count and the elapsed time (``now`` is ``time.monotonic()`` by default).
        """
        if now is None:
            now = time.monotonic()
        if self._progressed:
            self._progressed = False
            self._attempt = 0
            self._delays = self._policy.delays()
            self._first_failure = None
        if self._first_failure is None:
            self._first_failure = now
        delay = next(self._delays, None)
        if delay is None:
            return None
        remaining = self._policy.remaining(self._first_failure, now)
        if remaining is not None and remaining <= delay:
            return None
        self._attempt += 1
        return Resume(
            delay=delay,
            after_sequence=self.last_sequence,
            attempt=self._attempt,
            ready_timeout=None if remaining is None else remaining - delay,
        )

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
