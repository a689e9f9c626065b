"""h2 describes every received frame for its trace log, whether or not anyone logs.

``H2Connection._receive_frame`` calls ``repr(frame)`` eagerly and hands the
text to its logger; grpclib gives h2 no logger, so the text (a formatted,
hex-dumped frame: about a twentieth of a small call's CPU) is thrown away.
This makes ``repr`` inside h2's connection module return a stand-in that
formats the frame only when a logger actually turns it into text, so the
trace is unchanged for anyone who enables it.
"""

from __future__ import annotations

import builtins
from typing import Any

import h2.connection


class _DeferredRepr:
    """Formats as ``repr(target)``, computed only when asked."""

    __slots__ = ("_target",)

    def __init__(self, target: Any) -> None:
        self._target = target

    def __str__(self) -> str:
        return builtins.repr(self._target)

    __repr__ = __str__


def defer_frame_repr() -> None:
    """Install the deferred ``repr`` in h2's connection module (idempotent)."""
    h2.connection.repr = _DeferredRepr  # type: ignore[attr-defined]
