"""``serve``: run the worker until SIGTERM or Ctrl-C (and the sidecar start-up)."""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import event_loop
from ..config import WorkerConfig
from .common import UsageError

if TYPE_CHECKING:
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
        await stop.wait()
        await worker.stop()
    finally:
        if control is not None:
            control.close()
    return 0


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
