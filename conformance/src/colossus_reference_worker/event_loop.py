"""Which event loop serves: uvloop where it is installed, else asyncio's own.

The worker is CPU-bound on one event loop; uvloop's libuv transports and its
compiled TLS layer cost far less per request than asyncio's pure-Python ones,
which matters most when clients poll. ``--event-loop`` picks one explicitly.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
CHOICES = ("auto", "uvloop", "asyncio")
# auto: uvloop where it is installed (Linux and macOS), else asyncio.
DEFAULT = "auto"


class EventLoopUnavailable(Exception):
    """The requested event loop cannot be used on this machine."""


def add_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--event-loop", choices=CHOICES, default=DEFAULT,
                        help=f"event loop to serve on (default {DEFAULT}; auto: uvloop where "
                             "installed, else asyncio)")


def resolve(choice: str) -> str:
    """``uvloop`` or ``asyncio`` for a ``--event-loop`` choice; fails if uvloop is asked for but missing."""
    if choice not in CHOICES:
        raise EventLoopUnavailable(f"--event-loop: expected one of {', '.join(CHOICES)}, got {choice!r}")
    if choice == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if choice == "uvloop":
            raise EventLoopUnavailable("--event-loop uvloop: uvloop is not installed") from None
        return "asyncio"
    return "uvloop"


def runner(name: str) -> Callable[[Coroutine[Any, Any, T]], T]:
    """The ``asyncio.run`` equivalent for a resolved loop name."""
    if name == "uvloop":
        import uvloop

        return uvloop.run
    return asyncio.run


def run(choice: str, main: Coroutine[Any, Any, T]) -> T:
    """Runs ``main`` on the chosen loop."""
    try:
        name = resolve(choice)
    except EventLoopUnavailable:
        main.close()
        raise
    return runner(name)(main)


def log_running() -> None:
    """Says at INFO which loop serves (once serving started, so refusals print alone)."""
    name = "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"
    log.info("serving on the %s event loop%s", name, _version(name),
             extra={"fields": {"event": "event_loop", "loop": name}})


def _version(name: str) -> str:
    if name != "uvloop":
        return ""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f" (uvloop {version('uvloop')})"
    except PackageNotFoundError:
        return ""
