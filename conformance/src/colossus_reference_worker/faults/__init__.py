"""Fault injection for the conformance suite (W15), off unless asked for.

Started only by ``--fault-control-socket PATH`` (and optionally
``--fault-listener VARIANT``). :func:`enable` builds the hooks object the
server is started with and the control socket that arms them; the RPC handlers
never import this package.
"""

from __future__ import annotations

from .control import FaultControlServer
from .hooks import FaultHooks, FaultState
from .listener import ListenerVariant, build_listener_context
from .plan import FaultSpecError, parse_plan

__all__ = [
    "FaultControlServer",
    "FaultHooks",
    "FaultSpecError",
    "FaultState",
    "ListenerVariant",
    "build_listener_context",
    "enable",
    "parse_plan",
]


def enable(
    socket_path: str, listener: str | None = None
) -> tuple[FaultHooks, FaultControlServer]:
    """Hooks plus a started control server sharing one :class:`FaultState`.

    The caller passes the hooks to the server and closes the control server
    when the worker stops.
    """
    state = FaultState()
    hooks = FaultHooks(state, ListenerVariant(listener) if listener else None)
    control = FaultControlServer(socket_path, state)
    control.start()
    return hooks, control
