"""The status a grpc.aio client-streaming call ended with first, kept against a later overwrite.

When the worker answers a client-streaming call (an upload) while a chunk is still being
written, for example to refuse it at its first message, grpc.aio records the worker's
status and then, as the pending write fails, replaces it with
``INTERNAL: Internal error from Core`` (grpc/grpc#36066). The sync API and the other SDKs
report the worker's answer. :class:`FirstStatus` registers a done callback, which grpc.aio
runs when the first status is set, reads that status there and hands it back in place of
the INTERNAL that followed it. Any other error passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

import grpc
import grpc.aio

T = TypeVar("T")

# What grpc.aio puts in place of the worker's status after a failed write.
_OVERWRITE_DETAILS = "Internal error from Core"


def _settled(coro: Coroutine[Any, Any, T]) -> T | None:
    """The value of a coroutine that finishes without waiting, or None if it would wait."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        coro.close()
    return None


class FirstStatus:
    """Watches one grpc.aio call and remembers the first status it ended with."""

    __slots__ = ("_error",)

    def __init__(self, call: Any) -> None:
        self._error: grpc.aio.AioRpcError | None = None
        call.add_done_callback(self._on_done)

    def _on_done(self, call: Any) -> None:
        if self._error is not None:
            return  # only the first status counts
        # The status is set when this runs, so these coroutines finish at once.
        code = _settled(call.code())
        if code is None or code is grpc.StatusCode.OK:
            return
        self._error = grpc.aio.AioRpcError(
            code,
            initial_metadata=grpc.aio.Metadata(),
            trailing_metadata=_settled(call.trailing_metadata()) or grpc.aio.Metadata(),
            details=_settled(call.details()),
            debug_error_string=_settled(call.debug_error_string()),
        )

    def original(self, exc: grpc.RpcError) -> grpc.RpcError:
        """``exc``, or the worker's own status if grpc.aio overwrote it with INTERNAL."""
        first = self._error
        if (
            first is not None
            and isinstance(exc, grpc.aio.AioRpcError)
            and exc.code() is grpc.StatusCode.INTERNAL
            and exc.details() == _OVERWRITE_DETAILS
            and first.code() is not grpc.StatusCode.INTERNAL
        ):
            return first
        return exc
