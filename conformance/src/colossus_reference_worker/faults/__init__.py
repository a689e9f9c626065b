"""Fault injection for the conformance suite (W15), off unless asked for.

Started only by ``--fault-control-socket PATH`` (and optionally
``--fault-listener VARIANT`` and ``--fault-silent-close N``). :func:`enable` builds the hooks object the
server is started with and the control socket that arms them; the RPC handlers
never import this package.
"""

from __future__ import annotations

import argparse

from ..fault_flags import MAX_STARTUP_SILENT_CLOSES, ListenerVariant, add_arguments
from ..worker_hooks import WorkerHooks
from .control import FaultControlServer
from .hooks import FaultHooks, FaultState
from .listener import build_listener_context
from .plan import FaultSpecError, parse_plan

__all__ = [
    "MAX_STARTUP_SILENT_CLOSES",
    "FaultControlServer",
    "FaultHooks",
    "FaultSpecError",
    "FaultState",
    "ListenerVariant",
    "add_arguments",
    "build_listener_context",
    "enable",
    "hooks_from_args",
    "parse_plan",
]


def enable(
    socket_path: str, listener: str | None = None, silent_closes: int = 0
) -> tuple[FaultHooks, FaultControlServer]:
    """Hooks plus a started control server sharing one :class:`FaultState`.

    ``silent_closes`` connections accepted first are closed before any TLS byte, even
    before a case is armed (a restart whose client reconnects at once). The caller passes
    the hooks to the server and closes the control server when the worker stops.
    """
    if not 0 <= silent_closes <= MAX_STARTUP_SILENT_CLOSES:
        raise ValueError(f"--fault-silent-close must be 1 to {MAX_STARTUP_SILENT_CLOSES}")
    state = FaultState()
    state.startup_silent_closes = silent_closes
    hooks = FaultHooks(state, ListenerVariant(listener) if listener else None)
    control = FaultControlServer(socket_path, state)
    control.start()
    return hooks, control


def hooks_from_args(
    args: argparse.Namespace,
) -> tuple[WorkerHooks | None, FaultControlServer | None]:
    """``(hooks, control)`` when fault injection was asked for, else ``(None, None)``."""
    path = getattr(args, "fault_control_socket", None)
    listener = getattr(args, "fault_listener", None)
    silent_closes = getattr(args, "fault_silent_close", None)
    if path is None:
        if listener is not None:
            raise ValueError("--fault-listener needs --fault-control-socket")
        if silent_closes is not None:
            raise ValueError("--fault-silent-close needs --fault-control-socket")
        return None, None
    if silent_closes is not None and silent_closes < 1:
        raise ValueError(f"--fault-silent-close must be 1 to {MAX_STARTUP_SILENT_CLOSES}")
    return enable(path, listener, silent_closes or 0)
