"""Tie a sidecar's life to its parent's (W16).

The primary signal is end-of-file on the bootstrap input pipe: the parent
closes it, or the kernel does when the parent dies. As a backstop on Linux the
worker also asks for ``SIGTERM`` when its parent process exits
(``PR_SET_PDEATHSIG``), in case the pipe was leaked to another process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import signal
import sys
import threading
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    """Ask Linux to send ``sig`` when the parent exits; ``False`` elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    # The parent may have died before prctl took effect: then we were reparented.
    # (Compare with the parent seen before, not with 1: in a container the parent
    # may legitimately be process 1.)
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)
    return True


def watch_for_eof(fd: int, on_eof: Callable[[], None]) -> threading.Thread:
    """Call ``on_eof`` (from a daemon thread) once ``fd`` reaches end-of-file.

    Any bytes the parent sends after its request are read and ignored.
    """

    def run() -> None:
        try:
            while True:
                select.select([fd], [], [])
                if not os.read(fd, 4096):
                    break
        except OSError:
            pass
        on_eof()

    thread = threading.Thread(target=run, name="sidecar-parent-watch", daemon=True)
    thread.start()
    return thread
