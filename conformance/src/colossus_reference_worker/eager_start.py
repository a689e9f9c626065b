"""Run a coroutine's first step inside the current callback, the rest as a task.

``loop.create_task`` runs even the first step of a coroutine on a later loop
turn. The TLS listener needs ``loop.start_tls`` to take a fresh connection over
(pause reading, swap in the TLS protocol) before ``connection_made`` returns:
uvloop starts reading as soon as ``connection_made`` returns, whether or not
the protocol paused the transport, and polls the socket before the next turn,
so a ClientHello could otherwise reach the plain-TCP protocol and be lost.
Python 3.12's eager tasks do the same; this also works on 3.10 and 3.11.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def start_now(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """Steps ``coro`` to its first suspension now; a task carries on from there."""
    try:
        first = coro.send(None)
    except StopIteration as stop:
        return asyncio.get_running_loop().create_task(_returning(stop.value))
    except Exception as exc:
        return asyncio.get_running_loop().create_task(_raising(exc))
    return asyncio.get_running_loop().create_task(_continue(_Resumed(coro, first)))


async def _continue(rest: _Resumed[T]) -> T:
    return await rest


async def _returning(value: T) -> T:
    return value


async def _raising(exc: Exception) -> Any:
    raise exc


class _Resumed(Generic[T]):
    """The remainder of a coroutine that already yielded ``first`` (a future) to its driver."""

    def __init__(self, coro: Coroutine[Any, Any, T], first: Any) -> None:
        self._coro = coro
        self._first = first

    def __await__(self) -> Generator[Any, Any, T]:
        coro, signal = self._coro, self._first
        while True:
            try:
                sent = yield signal
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation or error thrown in by the task
                try:
                    signal = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
            else:
                try:
                    signal = coro.send(sent)
                except StopIteration as stop:
                    return stop.value  # type: ignore[no-any-return]
