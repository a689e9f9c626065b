"""Reads a server stream's messages from grpcio with fewer Python steps per message.

A stream read on the calling thread (the ``SingleThreadedUnaryStream`` channel option)
is a grpcio ``_SingleThreadedRendezvous``. Its iterator asks the core call for the next
message, waits for the completion, and then runs grpcio's generic completion handling:
three acquisitions of the call's condition and a walk over the batch's operations for
every message, about a quarter of the caller's CPU per watch event.

:func:`messages` asks the same core call for each message and waits for it exactly as
grpcio does, but handles the common completion (one received message) itself. Every
other completion (initial metadata, the status, the request's send batch) goes through
grpcio's own handler, and once the stream has no more messages the rest is left to
grpcio's iterator, which stops or raises the call's ``RpcError`` just as it would have.
``cancel()`` from another thread still ends the read (the pending operation completes
without a message).

These are grpcio internals, so they are used only on the grpcio releases they were
verified on (:data:`VERIFIED_GRPCIO`, both ends tested), checked again when this module is
imported and for each call; any other release or call is read through grpcio's public
iterator. Moving the bound to a newer grpcio means running this module's tests on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import grpc

VERIFIED_GRPCIO = ((1, 49), (1, 85))
"""The first and last grpcio minor releases whose internals this reader was checked on."""


def verified_grpcio(version: str) -> bool:
    """Whether grpcio ``version`` (``"1.85.3"``) lies within :data:`VERIFIED_GRPCIO`."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return VERIFIED_GRPCIO[0] <= (major, minor) <= VERIFIED_GRPCIO[1]


try:
    if not verified_grpcio(grpc.__version__):
        raise ImportError("grpcio release not verified for the in-place reader")
    from grpc import _channel as _grpc_channel
    from grpc._cython import cygrpc as _cygrpc  # type: ignore[attr-defined]

    _Rendezvous: Any = _grpc_channel._SingleThreadedRendezvous
    _handle_event: Any = _grpc_channel._handle_event
    _RECEIVE: Any = _cygrpc.OperationType.receive_message
    _receive_operation: Any = _cygrpc.ReceiveMessageOperation
    _NO_FLAGS: Any = _grpc_channel._EMPTY_FLAGS
except (ImportError, AttributeError):  # another grpcio: its public iterator is used
    _Rendezvous = None


def reads_in_place(call: object) -> bool:
    """Whether :func:`messages` reads ``call`` itself rather than through its iterator."""
    if _Rendezvous is None or type(call) is not _Rendezvous:
        return False
    state = getattr(call, "_state", None)
    return (
        # Only calls that hand over the bytes as received (no response deserializer).
        getattr(call, "_response_deserializer", False) is None
        and getattr(call, "_call", None) is not None
        and isinstance(getattr(state, "due", None), set)
        and hasattr(state, "condition")
        and hasattr(state, "code")
    )


def messages(call: Iterable[bytes]) -> Iterator[bytes]:
    """The encoded messages of a server stream ``call``, then its end.

    Ends like iterating ``call`` does: it stops after an OK status and raises the call's
    ``grpc.RpcError`` otherwise (also when the call was cancelled).
    """
    if not reads_in_place(call):
        return iter(call)
    return _read(call)


def _read(rendezvous: Any) -> Iterator[bytes]:
    core, state = rendezvous._call, rendezvous._state
    due = state.due
    # Holding the condition is holding its lock; taking the lock itself skips the
    # condition's Python-level __enter__/__exit__ (about half the saving per message).
    lock = getattr(state.condition, "_lock", state.condition)
    while True:
        with lock:
            if state.code is not None:  # finished (or cancelled) before this read
                break
            due.add(_RECEIVE)
            if not core.operate((_receive_operation(_NO_FLAGS),), None):
                due.remove(_RECEIVE)
                break
        message = _next_message(core, state, lock)
        if message is None:
            _drain(core, state)
            break
        yield message
    # grpcio's iterator ends it: StopIteration after OK, the call's RpcError otherwise.
    yield from rendezvous


def _next_message(core: Any, state: Any, lock: Any) -> bytes | None:
    """Waits for the pending read; other completions are grpcio's to handle meanwhile."""
    while True:
        event = core.next_event()
        operations = event.batch_operations
        if len(operations) == 1 and operations[0].type() == _RECEIVE:
            with lock:
                state.due.remove(_RECEIVE)
            message: bytes | None = operations[0].message()
            return message
        _handle(event, state)


def _drain(core: Any, state: Any) -> None:
    """After the last message: takes completions until the call's status is known."""
    while True:
        with state.condition:
            if state.code is not None or not state.due:
                return
        _handle(core.next_event(), state)


def _handle(event: Any, state: Any) -> None:
    # As grpcio's own iterator does: the handler and its callbacks under the condition.
    with state.condition:
        for callback in _handle_event(event, state, None):
            callback()
