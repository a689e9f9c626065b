"""The order of a column's cases, and the queue that hands them out to its runners.

A run takes the cases grouped by worker configuration (``order_cases``), so each worker
starts once in a serial run, and reports them in that order however they ran.
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


def order_cases(cases: list[Case]) -> list[Case]:
    """Groups cases by worker configuration (so each worker starts once), keeping catalogue order."""
    order = {
        "daemon": 0,
        "default-limits": 1,
        "none": 2,
        "tls12": 3,
        "foreign-leaf": 4,
        "leaf-with-intermediate": 5,
        "no-h2-alpn": 6,
    }
    return sorted(cases, key=lambda c: order.get(c.worker, 9))


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
