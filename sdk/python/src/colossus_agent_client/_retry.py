"""The retry of reads: only ``UNAVAILABLE``, only within the policy's two budgets.

Every read (``GetServerInfo`` at connect, ``GetRun``, ``ListRuns``, a download, the
watch's closing ``GetRun``) goes through :func:`retry_sync` or :func:`retry_async`;
mutations never do. Before a retry the channel is waited for, so attempts are not spent
while the worker is unreachable, and a trust relay's refusal replaces the
``UNAVAILABLE`` it caused. :class:`RetryPolicy` (``_options.py``) holds the budgets and
the delays.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Final, Protocol, TypeVar

import grpc

from ._errors import ColossusError, TrustError
from ._options import RetryPolicy
from ._status import from_rpc_error, is_retryable_code

log = logging.getLogger("colossus_agent_client")

T = TypeVar("T")

# How long a retry's wait for the channel trusts one connection before asking the backend
# again (a sidecar backend may have replaced it meanwhile).
_READY_SLICE_SECONDS: Final = 1.0


def refusal_or(error: ColossusError, refusal: TrustError | None) -> ColossusError:
    """The relay's refusal when ``error`` is the ``UNAVAILABLE`` it caused, else ``error``."""
    if refusal is not None and error.code is grpc.StatusCode.UNAVAILABLE:
        return refusal
    return error


def _next_delay(
    error: ColossusError, delays: Iterator[float], policy: RetryPolicy, first_failure: float
) -> float | None:
    """The delay before the next retry, or None when the error or a budget forbids one."""
    if not is_retryable_code(error.code):
        return None
    delay = next(delays, None)
    remaining = policy.remaining(first_failure, time.monotonic())
    if delay is None or (remaining is not None and remaining <= delay):
        return None
    return delay


def retry_sync(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    *,
    what: str,
    on_retry: Callable[[], None] | None = None,
    ready: Callable[[float | None], bool] | None = None,
    refusal: Callable[[], TrustError | None] | None = None,
) -> T:
    """Runs a read, retrying only ``UNAVAILABLE`` under ``policy``.

    ``ready(timeout)`` waits for the channel before each retry, within what is left of
    ``policy.max_elapsed``, so attempts are not spent while the worker is unreachable.
    ``refusal()`` (by default the one ``ready`` carries) names a relay refusal that
    replaces ``UNAVAILABLE``.
    """
    delays = policy.delays()
    first_failure: float | None = None
    refusal = refusal or getattr(ready, "refusal", None)
    while True:
        try:
            return attempt()
        except grpc.RpcError as exc:
            error = refusal_or(from_rpc_error(exc), refusal() if refusal else None)
            if first_failure is None:
                first_failure = time.monotonic()
            delay = _next_delay(error, delays, policy, first_failure)
            if delay is None:
                raise error from None
            log.info("%s unavailable; retrying in %.2f s", what, delay)
            time.sleep(delay)
            if on_retry is not None:
                on_retry()
            if ready is not None and not ready(policy.remaining(first_failure, time.monotonic())):
                raise error from None


async def retry_async(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    what: str,
    ready: Callable[[float | None], Awaitable[bool]] | None = None,
    refusal: Callable[[], Awaitable[TrustError | None]] | None = None,
) -> T:
    """The async twin of :func:`retry_sync`."""
    delays = policy.delays()
    first_failure: float | None = None
    refusal = refusal or getattr(ready, "refusal", None)
    while True:
        try:
            return await attempt()
        except grpc.RpcError as exc:
            error = refusal_or(from_rpc_error(exc), await refusal() if refusal else None)
            if first_failure is None:
                first_failure = time.monotonic()
            delay = _next_delay(error, delays, policy, first_failure)
            if delay is None:
                raise error from None
            log.info("%s unavailable; retrying in %.2f s", what, delay)
            await asyncio.sleep(delay)
            remaining = policy.remaining(first_failure, time.monotonic())
            if ready is not None and not await ready(remaining):
                raise error from None


class _SyncChannel(Protocol):
    def wait_ready(self, timeout: float | None) -> bool: ...

    def trust_refusal(self) -> TrustError | None: ...


class _AsyncChannel(Protocol):
    async def wait_ready(self, timeout: float | None) -> bool: ...

    def trust_refusal(self) -> TrustError | None: ...


class _SyncSource(Protocol):
    def connection(self) -> _SyncChannel: ...


class _AsyncSource(Protocol):
    async def connection(self) -> _AsyncChannel: ...


def _ready_slices(timeout: float | None) -> Iterator[float]:
    """The lengths of the slices a retry's wait for the channel is cut into.

    The backend is asked for its connection again before each slice, so a sidecar whose
    exit is noticed during the wait is replaced, instead of the read waiting out its whole
    budget on the dead worker's channel.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = _READY_SLICE_SECONDS if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return
        yield min(left, _READY_SLICE_SECONDS)


class _ReadySync:
    """A ``ready`` callback for :func:`retry_sync` that also names the relay's refusal."""

    def __init__(self, backend: _SyncSource) -> None:
        self._backend = backend

    def __call__(self, timeout: float | None) -> bool:
        for wait in _ready_slices(timeout):
            started = time.monotonic()
            if self._backend.connection().wait_ready(wait):
                return True
            if time.monotonic() - started < wait / 2:
                return False  # the channel closed under the wait: nothing to wait for
        return False

    def refusal(self) -> TrustError | None:
        return self._backend.connection().trust_refusal()


class _ReadyAsync:
    """The asyncio twin of :class:`_ReadySync`."""

    def __init__(self, backend: _AsyncSource) -> None:
        self._backend = backend

    async def __call__(self, timeout: float | None) -> bool:
        for wait in _ready_slices(timeout):
            started = time.monotonic()
            if await (await self._backend.connection()).wait_ready(wait):
                return True
            if time.monotonic() - started < wait / 2:
                return False  # the channel closed under the wait: nothing to wait for
        return False

    async def refusal(self) -> TrustError | None:
        return (await self._backend.connection()).trust_refusal()


def ready_sync(backend: _SyncSource) -> Callable[[float | None], bool]:
    """A ``ready`` callback for :func:`retry_sync` over the backend's current channel."""
    return _ReadySync(backend)


def ready_async(backend: _AsyncSource) -> Callable[[float | None], Awaitable[bool]]:
    """A ``ready`` callback for :func:`retry_async` over the backend's current channel."""
    return _ReadyAsync(backend)
