"""A reopened watch starts after the cursor of the core's resume plan, and no other.

The core's plan is the one resume rule (the same in every SDK). To tell its cursor from
the core's ``last_sequence`` (which it equals today), the plan here is made to name one
event earlier: a driver that reads the cursor anywhere else sends 2, not 1. The replayed
event 2 is then dropped as the exact replay it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client._watch_core import Resume, WatchCore
from colossus_agent_client.api.v1alpha1 import runs_pb2
from fake_worker import FakeWorker, make_run, output_event, terminal_event

RUN = "run_1"
END_OF_FIRST_STREAM: dict[str, tuple[object, ...]] = {
    "retryable-failure": ("fail", grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE"),
    "clean-close": ("close",),
}


@pytest.fixture(autouse=True)
def plan_one_event_back(monkeypatch: pytest.MonkeyPatch) -> None:
    planned = WatchCore.on_retryable_failure

    def earlier(self: WatchCore[bytes], now: float | None = None) -> Resume | None:
        plan = planned(self, now)
        if plan is None:
            return None
        return dataclasses.replace(plan, after_sequence=plan.after_sequence - 1)

    monkeypatch.setattr(WatchCore, "on_retryable_failure", earlier)


def _two_streams(
    fake: FakeWorker, end: str, seen: list[int]
) -> Callable[[colossus.ReconnectInfo], None]:
    """The first stream ends as ``end`` says after events 1 and 2; the second replays 2
    and brings 3 and the terminal 4. Returns the reconnect hook, which notes each
    reconnect's cursor in ``seen`` and lets the run end."""
    ev = [output_event(RUN, i) for i in range(1, 4)] + [terminal_event(RUN, 4)]
    fake.b.watch_scripts = [
        [("event", ev[0]), ("event", ev[1]), END_OF_FIRST_STREAM[end]],
        [("event", ev[1]), ("event", ev[2]), ("event", ev[3])],
    ]
    fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_RUNNING, last_sequence=2)

    def hook(info: colossus.ReconnectInfo) -> None:
        seen.append(info.after_sequence)
        fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=4)

    return hook


def _sent_cursors(fake: FakeWorker) -> list[int]:
    return [c[1].after_sequence for c in fake.calls if c[0] == "WatchRun"]


@pytest.mark.parametrize("end", sorted(END_OF_FIRST_STREAM))
def test_sync_reconnect_takes_the_plans_cursor(
    fake: FakeWorker, client: colossus.Client, end: str
) -> None:
    seen: list[int] = []
    watch = client.runs.watch(RUN, on_reconnect=_two_streams(fake, end, seen))
    assert [e.sequence for e in watch] == [1, 2, 3, 4]
    assert (_sent_cursors(fake), seen) == ([0, 1], [1])


@pytest.mark.parametrize("end", sorted(END_OF_FIRST_STREAM))
async def test_async_reconnect_takes_the_plans_cursor(
    fake: FakeWorker, options: colossus.DaemonOptions, end: str
) -> None:
    seen: list[int] = []
    async with await colossus.AsyncClient.connect(options) as client:
        watch = client.runs.watch(RUN, on_reconnect=_two_streams(fake, end, seen))
        assert [e.sequence async for e in watch] == [1, 2, 3, 4]
    assert (_sent_cursors(fake), seen) == ([0, 1], [1])
