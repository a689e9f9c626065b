"""Closing and cancelling the way Python users expect.

A watch left early (``break``, ``close()``, ``aclose()``, garbage collection, Ctrl-C)
cancels its call on the worker; ``with`` / ``async with`` leave no thread of the client
running; ``close()`` may be called twice. Waits poll a condition with a generous limit,
so no verdict depends on the machine's speed.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import threading
import time
from collections.abc import Callable

import pytest

import colossus_agent_client as colossus
from fake_worker import FakeWorker, output_event

RUN = "run_1"
LIMIT = 20.0


def _wait_for(condition: Callable[[], bool], what: str | Callable[[], str]) -> None:
    deadline = time.monotonic() + LIMIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting for {what if isinstance(what, str) else what()}")
        time.sleep(0.01)


def _hold_after_one_event(fake: FakeWorker, watches: int = 1) -> None:
    fake.b.watch_scripts = [[("event", output_event(RUN, 1)), ("hold",)] for _ in range(watches)]


def _cancelled(fake: FakeWorker, count: int = 1) -> None:
    _wait_for(lambda: fake.cancelled_watches >= count, "the worker to see the watch cancelled")


# The fake worker's handler threads and the event loop's default executor's threads.
NOT_THE_CLIENTS = ("ThreadPoolExecutor", "asyncio_")


def _client_threads(earlier: set[int]) -> list[str]:
    """Live threads started since ``earlier`` by the client under test."""
    return sorted(
        t.name
        for t in threading.enumerate()
        if t.ident not in earlier and not t.name.startswith(NOT_THE_CLIENTS)
    )


def test_break_out_of_a_watch_loop_cancels_the_call(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _hold_after_one_event(fake)
    for event in client.runs.watch(RUN):
        assert event.sequence == 1
        break
    _cancelled(fake)


def test_closing_a_watch_cancels_the_call(fake: FakeWorker, client: colossus.Client) -> None:
    _hold_after_one_event(fake, 2)
    with client.runs.watch(RUN) as watch:
        assert next(watch).sequence == 1
    _cancelled(fake)
    watch = client.runs.watch(RUN)
    assert next(watch).sequence == 1
    watch.close()
    watch.close()
    _cancelled(fake, 2)
    assert "CancelRun" not in fake.methods()


def test_a_collected_watch_cancels_the_call(fake: FakeWorker, client: colossus.Client) -> None:
    _hold_after_one_event(fake)
    events = iter(client.runs.watch(RUN))
    assert next(events).sequence == 1
    del events
    gc.collect()
    _cancelled(fake)


def test_ctrl_c_during_a_blocking_watch_cancels_the_call(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _hold_after_one_event(fake)
    main = threading.get_ident()
    seen: list[int] = []

    def interrupt_once_blocked() -> None:
        _wait_for(lambda: bool(seen), "the first event")
        time.sleep(0.2)  # the main thread is now blocked waiting for the next event
        signal.pthread_kill(main, signal.SIGINT)

    # A process started in the background by a non-interactive shell (CI lanes, nohup)
    # inherits SIGINT ignored, and Python then leaves it ignored: the watch would never
    # be interrupted. Ctrl-C in a terminal runs Python's default handler; so does this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupter = threading.Thread(target=interrupt_once_blocked)
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            for event in client.runs.watch(RUN):
                seen.append(event.sequence)
        interrupter.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [1]
    _cancelled(fake)


def test_with_block_stops_every_client_thread_and_close_twice_is_safe(
    fake: FakeWorker, options: colossus.DaemonOptions
) -> None:
    _hold_after_one_event(fake)
    before = {t.ident for t in threading.enumerate() if t.ident is not None}
    with colossus.Client.connect(options) as client:
        watch = client.runs.watch(RUN)
        assert next(watch).sequence == 1
    client.close()
    _cancelled(fake)
    _wait_for(lambda: not _client_threads(before), lambda: f"{_client_threads(before)} to end")
    with pytest.raises(colossus.ClientClosedError):
        client.runs.get(RUN)


async def test_async_break_aclose_and_async_with_cancel_the_call(
    fake: FakeWorker, options: colossus.DaemonOptions
) -> None:
    _hold_after_one_event(fake, 3)
    async with await colossus.AsyncClient.connect(options) as client:
        async for event in client.runs.watch(RUN):
            assert event.sequence == 1
            break
        await asyncio.to_thread(_cancelled, fake, 1)
        async with client.runs.watch(RUN) as watch:
            assert (await watch.__anext__()).sequence == 1
        await asyncio.to_thread(_cancelled, fake, 2)
        watch = client.runs.watch(RUN)
        assert (await watch.__anext__()).sequence == 1
        await watch.close()
        await watch.close()
        await asyncio.to_thread(_cancelled, fake, 3)


async def test_async_with_stops_every_client_thread_and_close_twice_is_safe(
    fake: FakeWorker, options: colossus.DaemonOptions
) -> None:
    _hold_after_one_event(fake)
    before = {t.ident for t in threading.enumerate() if t.ident is not None}
    async with await colossus.AsyncClient.connect(options) as client:
        watch = client.runs.watch(RUN)
        assert (await watch.__anext__()).sequence == 1
    await client.close()
    await asyncio.to_thread(_cancelled, fake)
    await asyncio.to_thread(
        _wait_for, lambda: not _client_threads(before), lambda: f"{_client_threads(before)} to end"
    )
    with pytest.raises(colossus.ClientClosedError):
        await client.runs.get(RUN)
    # The watch still held was closed with its client: it ends instead of waiting.
    with pytest.raises(StopAsyncIteration):
        await watch.__anext__()


def test_closing_the_client_ends_a_blocked_watch_with_client_closed_error(
    fake: FakeWorker, options: colossus.DaemonOptions
) -> None:
    _hold_after_one_event(fake)
    client = colossus.Client.connect(options)
    watch = client.runs.watch(RUN)
    assert next(watch).sequence == 1
    closer = threading.Timer(0.2, client.close)  # while the next line waits for an event
    closer.start()
    with pytest.raises(colossus.ClientClosedError):
        next(watch)
    closer.join()
    _cancelled(fake)
