"""``client.with_options(...)``: a client with other defaults over the same connection.

Only the defaults a call reads from its connection change (the per-call timeout and the
read and reconnect policy); trust, credentials, the channel and a sidecar's worker stay
shared, as with TypeScript's ``withOptions`` and Go's ``WithOptions``.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any, cast

from ._connection import DEFAULT, AsyncConnection, SyncConnection
from ._options import ClientOptions, RetryPolicy
from ._watch import AsyncWatch


class _ConnectionView:
    """A connection seen with other default options (timeout, retry); all else shared."""

    def __init__(self, connection: Any, options: ClientOptions) -> None:
        self._connection = connection
        self.options = options

    def timeout(self, timeout: float | object | None) -> float | None:
        if timeout is DEFAULT:
            return self.options.timeout
        return cast("float | None", timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class SyncOverride:
    def __init__(self, inner: Any, changes: dict[str, Any]) -> None:
        self._inner = inner
        self._changes = changes

    def connection(self) -> SyncConnection:
        conn = self._inner.connection()
        view = _ConnectionView(conn, dataclasses.replace(conn.options, **self._changes))
        return cast(SyncConnection, view)

    def close(self) -> None:
        self._inner.close()


class AsyncOverride:
    def __init__(self, inner: Any, changes: dict[str, Any]) -> None:
        self._inner = inner
        self._changes = changes

    @property
    def _connection(self) -> AsyncConnection | None:
        return cast("AsyncConnection | None", self._inner._connection)

    @property
    def watches(self) -> weakref.WeakSet[AsyncWatch]:
        return cast("weakref.WeakSet[AsyncWatch]", self._inner.watches)

    async def connection(self) -> AsyncConnection:
        conn = await self._inner.connection()
        view = _ConnectionView(conn, dataclasses.replace(conn.options, **self._changes))
        return cast(AsyncConnection, view)

    async def close(self) -> None:
        await self._inner.close()


def option_changes(timeout: float | object | None, retry: RetryPolicy | None) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if timeout is not DEFAULT:
        if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
            raise TypeError("timeout must be a positive number of seconds or None")
        changes["timeout"] = timeout
    if retry is not None:
        if not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        changes["retry"] = retry
    return changes
