"""The cases of one SDK column, handed out one at a time to the column's runners.

A column can be run by several runners at once (``--jobs`` above the number of
columns). Each runner has a client process and workers of its own and takes its
next case from the column's queue when it is free, so a runner held up by a
long case (a worker kept down past a watch budget, a crash-looping sidecar)
does not hold up the cases behind it. Cases with the longest time-outs go
first: their authors raised the time-out because they take long, and starting
them first keeps them from ending up alone at the end of the run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from .catalogue import Case


def longest_first(cases: Iterable[Case]) -> list[Case]:
    """The cases by time-out, longest first; equal time-outs keep their order."""
    return sorted(cases, key=lambda c: -c.timeout_seconds)


class CaseQueue:
    """A thread-safe iterator over one column's cases, shared by that column's runners."""

    def __init__(self, cases: Iterable[Case]):
        self._cases = list(cases)
        self._lock = threading.Lock()
        self.abandoned: list[str] = []  # why runners stopped taking cases (their client died)

    def __iter__(self) -> CaseQueue:
        return self

    def __next__(self) -> Case:
        with self._lock:
            if not self._cases:
                raise StopIteration
            return self._cases.pop(0)

    def put_back(self, case: Case) -> None:
        """Returns a case taken by a runner that will not run it, for another runner."""
        with self._lock:
            self._cases.insert(0, case)

    def give_up(self, reason: str) -> None:
        """Records that a runner stopped taking cases; the others carry on."""
        with self._lock:
            self.abandoned.append(reason)

    def drain(self) -> list[Case]:
        """What no runner took (every runner of the column gave up), emptying the queue."""
        with self._lock:
            left, self._cases = self._cases, []
            return left
