"""A read's retry waits for *the backend's current* channel, not the one it failed on.

A sidecar worker can die between a read's failed attempt and the moment the supervisor
notices; the retry's wait then starts on the dead worker's channel. It must ask the backend
again while it waits, so the replacement the backend makes meanwhile is used (S7), instead
of waiting out the read's whole budget and failing with a transport error.
"""

from __future__ import annotations

import time

from colossus_agent_client._retry import ready_async, ready_sync


class _DeadChannel:
    """A connection whose worker is gone: waiting never makes it ready."""

    def __init__(self) -> None:
        self.waits: list[float | None] = []

    def wait_ready(self, timeout: float | None) -> bool:
        self.waits.append(timeout)
        if timeout is not None and timeout <= 2:
            time.sleep(timeout)
        return False


class _LiveChannel:
    def wait_ready(self, timeout: float | None) -> bool:
        return True


class _ReplacingBackend:
    """Hands out the dead connection until its exit is 'noticed' (the second ask)."""

    def __init__(self) -> None:
        self.dead = _DeadChannel()
        self.asks = 0

    def connection(self) -> _DeadChannel | _LiveChannel:
        self.asks += 1
        return self.dead if self.asks == 1 else _LiveChannel()


def test_the_sync_wait_moves_to_the_replacement_connection() -> None:
    backend = _ReplacingBackend()
    started = time.monotonic()
    assert ready_sync(backend)(30.0)  # type: ignore[arg-type]
    assert time.monotonic() - started < 5
    assert backend.dead.waits and all(w is not None and w <= 2 for w in backend.dead.waits)


async def test_the_async_wait_moves_to_the_replacement_connection() -> None:
    class _AsyncBackend:
        def __init__(self) -> None:
            self.inner = _ReplacingBackend()

        async def connection(self) -> object:
            conn = self.inner.connection()

            class _Wrapped:
                async def wait_ready(self, timeout: float | None) -> bool:
                    return conn.wait_ready(timeout)

            return _Wrapped()

    backend = _AsyncBackend()
    started = time.monotonic()
    assert await ready_async(backend)(30.0)  # type: ignore[arg-type]
    assert time.monotonic() - started < 5
    waits = backend.inner.dead.waits
    assert waits and all(w is not None and w <= 2 for w in waits)


def test_a_closed_channel_ends_the_wait_at_once() -> None:
    class _Closed:
        def wait_ready(self, timeout: float | None) -> bool:
            return False  # as wait_ready_sync does when the channel closed under it

    class _Backend:
        def connection(self) -> _Closed:
            return _Closed()

    started = time.monotonic()
    assert not ready_sync(_Backend())(30.0)  # type: ignore[arg-type]
    assert time.monotonic() - started < 1
