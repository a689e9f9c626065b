"""``serve``: run the worker until SIGTERM or Ctrl-C (and the sidecar start-up)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import event_loop
from ..config import WorkerConfig
from .common import UsageError

if TYPE_CHECKING:
    from ..hooks import WorkerHooks
    from ..server import RunningWorker

OnServing = Callable[["RunningWorker"], None]


async def serve(config: WorkerConfig, args: argparse.Namespace,
                on_serving: OnServing | None = None) -> int:
    """Serve until a signal; ``on_serving`` gets the running worker once it listens."""
    # Imported here, not with the command line: only a serving worker needs them.
    from ..faults import hooks_from_args
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
            # The fault channel may restart the worker in this process (docs/fault-control.md).
            control.restart_handler = lifetimes.threadsafe_restart(loop)
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

    async def restart(self, down_seconds: float) -> None:
        from ..server import start_worker

        async with self.lock:
            if self.stopping or self.worker is None:
                raise RuntimeError("the worker is stopping")
            await self.worker.stop()
            # What the process's exit would do next: its sockets close under the clients.
            self.worker.abort_connections()
            self.worker = None
            await asyncio.sleep(down_seconds)
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

    def threadsafe_restart(self, loop: asyncio.AbstractEventLoop) -> Callable[[float], None]:
        """A restart callable for another thread; returns once the new lifetime serves."""

        def restart(down_seconds: float) -> None:
            asyncio.run_coroutine_threadsafe(self.restart(down_seconds), loop).result(
                RESTART_TIMEOUT_SECONDS)

        return restart


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
