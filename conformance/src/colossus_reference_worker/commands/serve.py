"""``serve``: run the worker until SIGTERM or Ctrl-C (and the sidecar start-up)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from .. import event_loop
from ..config import WorkerConfig
from .common import UsageError

if TYPE_CHECKING:
    from ..server import RunningWorker
    from ..worker_hooks import WorkerHooks

OnServing = Callable[["RunningWorker"], None]


async def serve(config: WorkerConfig, args: argparse.Namespace,
                on_serving: OnServing | None = None) -> int:
    """Serve until a signal; ``on_serving`` gets the running worker once it listens."""
    # Imported here, not with the command line: only a serving worker needs them.
    from ..faults import FaultHooks, hooks_from_args
    from ..server import start_worker
    from .admin import check_public_dir

    check_public_dir(config)  # before the state folder inside it is created
    try:
        hooks, control = hooks_from_args(args)  # (None, None) unless fault injection is on
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    # Handlers go in before start-up: a SIGTERM that arrives just after the discovery
    # files appear must still stop the worker gracefully (and remove them).
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        worker = await start_worker(config, hooks)
        event_loop.log_running()
        if on_serving is not None:
            on_serving(worker)
        lifetimes = _Lifetimes(config, hooks, worker)
        if control is not None:
            # The fault channel may restart the worker in this process, and a shutdown
            # fault may stop it until its case ends (docs/fault-control.md).
            control.restart_handler = lifetimes.threadsafe(loop, lifetimes.restart)
            control.resume_handler = lifetimes.threadsafe(loop, lifetimes.resume)
            if isinstance(hooks, FaultHooks):
                hooks.begin_shutdown = lifetimes.begin_shutdown
        await stop.wait()
        await lifetimes.stop()
    finally:
        if control is not None:
            control.close()
    return 0


class _Lifetimes:
    """The serving worker, which the fault channel may restart inside this process.

    A restart takes the very path a SIGTERM takes (:meth:`RunningWorker.stop`: no new
    connections, discovery withdrawn, watches ended with UNAVAILABLE, connections closed,
    journal closed) and then starts afresh on the same port (journal reopened, runs
    recovered, discovery published again). Only the interpreter's start-up is skipped,
    so the conformance suite can restart a worker dozens of times in a few seconds.
    """

    def __init__(self, config: WorkerConfig, hooks: WorkerHooks | None,
                 worker: RunningWorker) -> None:
        port = int(worker.endpoint.rsplit(":", 1)[1])
        self.config = dataclasses.replace(config, port=port)  # the same port every time
        self.hooks = hooks
        self.worker: RunningWorker | None = worker
        self.lock = asyncio.Lock()
        self.stopping = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def restart(self, down_seconds: float) -> None:
        async with self.lock:
            if self.stopping or self.worker is None:
                raise RuntimeError("the worker is not serving")
            await self._halt()
            await asyncio.sleep(down_seconds)
            await self._start()

    def begin_shutdown(self, down_seconds: float | None) -> None:
        """Begin a graceful stop now (the caller's call still in flight); start again
        ``down_seconds`` later, or only at :meth:`resume` when ``None``."""
        task = asyncio.get_running_loop().create_task(self._shutdown(down_seconds))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _shutdown(self, down_seconds: float | None) -> None:
        async with self.lock:
            if self.stopping or self.worker is None:
                return
            await self._halt()
            if down_seconds is None:
                return  # down until resume()
            await asyncio.sleep(down_seconds)
            if not self.stopping:
                await self._start()

    async def resume(self, _: object = None) -> None:
        """Start again if a shutdown fault left the worker stopped."""
        async with self.lock:
            if self.worker is None and not self.stopping:
                await self._start()

    async def _halt(self) -> None:
        assert self.worker is not None
        await self.worker.stop()
        # What the process's exit would do next: its sockets close under the clients.
        self.worker.abort_connections()
        self.worker = None

    async def _start(self) -> None:
        from ..server import start_worker

        new_lifetime = getattr(self.hooks, "new_lifetime", None)
        if new_lifetime is not None:
            new_lifetime()
        self.worker = await start_worker(self.config, self.hooks)

    async def stop(self) -> None:
        self.stopping = True
        async with self.lock:
            if self.worker is not None:
                await self.worker.stop()
                self.worker = None

    @staticmethod
    def threadsafe(loop: asyncio.AbstractEventLoop,
                   action: Callable[[float], Coroutine[Any, Any, None]]) -> Callable[[float], None]:
        """``action`` as a callable for another thread; returns once it is done."""

        def call(seconds: float) -> None:
            asyncio.run_coroutine_threadsafe(action(seconds), loop).result(RESTART_TIMEOUT_SECONDS)

        return call


# Bound on one in-process restart (graceful stop, gap and start) asked for by the fault channel.
RESTART_TIMEOUT_SECONDS = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The serve-only flags that belong to this module (``--event-loop``)."""
    event_loop.add_argument(parser)


def run_serve(config: WorkerConfig, args: argparse.Namespace,
              on_serving: OnServing | None = None) -> int:
    # ``dev`` has no --event-loop flag: it serves on the default loop.
    choice = getattr(args, "event_loop", event_loop.DEFAULT)
    try:
        return event_loop.run(choice, serve(config, args, on_serving))
    except event_loop.EventLoopUnavailable as exc:
        raise UsageError(str(exc)) from None
