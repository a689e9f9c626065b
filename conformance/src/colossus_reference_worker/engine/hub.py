"""Wakes watches and drivers when a run's journal stream grows."""

from __future__ import annotations

import asyncio


class ChangeHub:
    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def current(self, run_id: str) -> asyncio.Event:
        """The event the next :meth:`notify` of ``run_id`` will set."""
        event = self._events.get(run_id)
        if event is None:
            event = self._events[run_id] = asyncio.Event()
        return event

    def notify(self, run_id: str) -> None:
        event = self._events.pop(run_id, None)
        if event is not None:
            event.set()

    def forget(self, run_id: str) -> None:
        """Drop a terminal run's entry; nothing will ever notify it again."""
        self._events.pop(run_id, None)

    def notify_all(self) -> None:
        for run_id in list(self._events):
            self.notify(run_id)
