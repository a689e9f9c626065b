"""S1 watch behaviour against the fake worker, for both clients."""

from __future__ import annotations

import time

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client.api.v1alpha1 import runs_pb2
from fake_worker import FakeWorker, make_run, output_event, terminal_event

RUN = "run_1"
U = grpc.StatusCode.UNAVAILABLE


def _events(n: int) -> list[runs_pb2.RunEvent]:
    return [output_event(RUN, i) for i in range(1, n)] + [terminal_event(RUN, n)]


def _finished(fake: FakeWorker, n: int) -> None:
    fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=n)


def _seqs(watch: colossus.Watch) -> list[int]:
    return [e.sequence for e in watch]


def test_plain_watch_delivers_in_order_and_reconciles(
    fake: FakeWorker, client: colossus.Client
) -> None:
    fake.b.events[RUN] = _events(5)
    _finished(fake, 5)
    with client.runs.watch(RUN) as watch:
        events = list(watch)
    assert [e.sequence for e in events] == [1, 2, 3, 4, 5]
    assert isinstance(events[0].payload, colossus.OutputDelta)
    assert events[-1].is_terminal
    assert watch.last_sequence == 5
    assert fake.methods()[-2:] == ["WatchRun", "GetRun"]


def test_exact_replays_are_dropped(fake: FakeWorker, client: colossus.Client) -> None:
    ev = _events(4)
    fake.b.watch_scripts = [
        [
            ("event", ev[0]),
            ("event", ev[1]),
            ("event", ev[0]),
            ("event", ev[1]),
            ("event", ev[2]),
            ("event", ev[2]),
            ("event", ev[3]),
        ]
    ]
    _finished(fake, 4)
    assert _seqs(client.runs.watch(RUN)) == [1, 2, 3, 4]


def test_altered_replay_is_a_protocol_violation(fake: FakeWorker, client: colossus.Client) -> None:
    ev = _events(3)
    fake.b.watch_scripts = [
        [("event", ev[0]), ("event", ev[1]), ("event", output_event(RUN, 2, "other"))]
    ]
    watch = client.runs.watch(RUN)
    delivered = []
    with pytest.raises(colossus.ProtocolViolationError) as info:
        for e in watch:
            delivered.append(e.sequence)
    assert info.value.reason == "WATCH_REPLAY_ALTERED"
    assert delivered == [1, 2]
    assert not isinstance(info.value, colossus.WatchGapError)


def test_gap_fails(fake: FakeWorker, client: colossus.Client) -> None:
    ev = _events(5)
    fake.b.watch_scripts = [[("event", ev[0]), ("event", ev[2])]]
    with pytest.raises(colossus.WatchGapError) as info:
        list(client.runs.watch(RUN))
    assert info.value.metadata == {"expected": "2", "received": "3"}
    assert fake.methods().count("WatchRun") == 1


def test_retryable_failure_reconnects_from_the_cursor(
    fake: FakeWorker, client: colossus.Client
) -> None:
    ev = _events(5)
    fake.b.watch_scripts = [
        [("event", ev[0]), ("event", ev[1]), ("fail", U, "UNAVAILABLE")],
        [("event", ev[2]), ("event", ev[3]), ("event", ev[4])],
    ]
    _finished(fake, 5)
    seen: list[colossus.ReconnectInfo] = []
    watch = client.runs.watch(RUN, on_reconnect=seen.append)
    assert _seqs(watch) == [1, 2, 3, 4, 5]
    watch_calls = [c[1] for c in fake.calls if c[0] == "WatchRun"]
    assert [c.after_sequence for c in watch_calls] == [0, 2]
    assert len(seen) == 1 and seen[0].after_sequence == 2 and seen[0].attempt == 1
    assert seen[0].cause is not None and seen[0].cause.code is U
    assert 0 <= seen[0].delay <= 0.02


def test_non_retryable_failure_is_raised_without_reconnect(
    fake: FakeWorker, client: colossus.Client
) -> None:
    fake.b.watch_scripts = [[("fail", grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")]]
    with pytest.raises(colossus.NotFoundError):
        list(client.runs.watch(RUN))
    assert fake.methods().count("WatchRun") == 1


def test_reconnects_are_bounded(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.watch_scripts = [[("fail", U, "UNAVAILABLE")] for _ in range(10)]
    with pytest.raises(colossus.TransportError):
        list(client.runs.watch(RUN))
    assert fake.methods().count("WatchRun") == 4  # FAST_RETRY.max_attempts


def test_clean_close_of_running_run_resumes(fake: FakeWorker, client: colossus.Client) -> None:
    ev = _events(4)
    fake.b.watch_scripts = [
        [("event", ev[0]), ("event", ev[1]), ("close",)],
        [("event", ev[2]), ("event", ev[3])],
    ]
    fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_RUNNING, last_sequence=2)
    seen: list[colossus.ReconnectInfo] = []

    def hook(info: colossus.ReconnectInfo) -> None:
        seen.append(info)
        _finished(fake, 4)

    assert _seqs(client.runs.watch(RUN, on_reconnect=hook)) == [1, 2, 3, 4]
    assert seen[0].cause is None
    assert fake.methods().count("GetRun") == 2


def test_clean_close_before_terminal_of_a_finished_run_fails(
    fake: FakeWorker, client: colossus.Client
) -> None:
    ev = _events(4)
    fake.b.watch_scripts = [[("event", ev[0]), ("event", ev[1]), ("close",)]]
    _finished(fake, 4)
    with pytest.raises(colossus.ProtocolViolationError) as info:
        list(client.runs.watch(RUN))
    assert info.value.reason == "WATCH_RECONCILE_MISMATCH"


def test_event_of_another_run_fails(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.watch_scripts = [[("event", output_event("run_other", 1))]]
    with pytest.raises(colossus.ProtocolViolationError):
        list(client.runs.watch(RUN))


def test_resume_from_a_given_cursor(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.events[RUN] = _events(6)
    _finished(fake, 6)
    watch = client.runs.watch(RUN, after_sequence=4)
    assert _seqs(watch) == [5, 6]


def test_idle_timeout(fake: FakeWorker, client: colossus.Client) -> None:
    ev = _events(3)
    fake.b.watch_scripts = [[("event", ev[0]), ("stall", 2.0), ("event", ev[1])]]
    started = time.monotonic()
    with pytest.raises(colossus.WatchIdleTimeoutError):
        list(client.runs.watch(RUN, idle_timeout=0.3))
    assert time.monotonic() - started < 1.8


def test_closing_a_watch_stops_iteration(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.events[RUN] = _events(10)
    watch = client.runs.watch(RUN)
    it = iter(watch)
    assert next(it).sequence == 1
    watch.close()
    with pytest.raises(StopIteration):
        next(it)
    assert "CancelRun" not in fake.methods()


async def test_async_watch_dedup_reconnect_and_reconcile(
    fake: FakeWorker, options: colossus.DaemonOptions
) -> None:
    ev = _events(5)
    fake.b.watch_scripts = [
        [("event", ev[0]), ("event", ev[0]), ("event", ev[1]), ("fail", U, "UNAVAILABLE")],
        [("event", ev[1]), ("event", ev[2]), ("close",)],
        [("event", ev[3]), ("event", ev[4])],
    ]
    fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_RUNNING, last_sequence=3)
    seen: list[colossus.ReconnectInfo] = []

    def hook(info: colossus.ReconnectInfo) -> None:
        seen.append(info)
        if len(seen) == 2:
            _finished(fake, 5)

    async with await colossus.AsyncClient.connect(options) as client:
        async with client.runs.watch(RUN, on_reconnect=hook) as watch:
            got = [e.sequence async for e in watch]
    assert got == [1, 2, 3, 4, 5]
    assert watch.last_sequence == 5
    assert [c[1].after_sequence for c in fake.calls if c[0] == "WatchRun"] == [0, 2, 3]


async def test_async_watch_gap_and_idle(fake: FakeWorker, options: colossus.DaemonOptions) -> None:
    ev = _events(5)
    fake.b.watch_scripts = [
        [("event", ev[0]), ("event", ev[3])],
        [("event", ev[0]), ("stall", 2.0)],
    ]
    async with await colossus.AsyncClient.connect(options) as client:
        with pytest.raises(colossus.WatchGapError):
            [e async for e in client.runs.watch(RUN)]
        with pytest.raises(colossus.WatchIdleTimeoutError):
            [e async for e in client.runs.watch(RUN, idle_timeout=0.3)]


def test_close_from_another_thread_ends_a_blocked_watch(
    fake: FakeWorker, client: colossus.Client
) -> None:
    import threading

    ev = _events(3)
    fake.b.watch_scripts = [[("event", ev[0]), ("stall", 5.0), ("event", ev[1])]]
    watch = client.runs.watch(RUN)
    timer = threading.Timer(0.3, watch.close)
    timer.start()
    started = time.monotonic()
    assert _seqs(watch) == [1]
    assert time.monotonic() - started < 3
    timer.join()


def test_sync_streams_are_read_on_the_calling_thread(
    fake: FakeWorker, client: colossus.Client
) -> None:
    # grpcio only honours the exact key; a misspelt option would be ignored silently and
    # every event would again be handed over from the polling thread.
    import grpc.experimental

    from colossus_agent_client._transport._channel import sync_channel_options

    keys = [key for key, _ in sync_channel_options(1024, 1024)]
    assert grpc.experimental.ChannelOptions.SingleThreadedUnaryStream in keys
    fake.b.watch_scripts = [[("event", e) for e in _events(2)]]
    _finished(fake, 2)
    watch = client.runs.watch(RUN)
    assert _seqs(watch) == [1, 2]
    # The watch read its stream through grpcio's single-threaded iterator (the method
    # grpcio made, under the request cap's check).
    conn = client._backend.connection()  # type: ignore[attr-defined]
    assert type(conn.runs.WatchRun._method).__name__ == "_SingleThreadedUnaryStreamMultiCallable"
