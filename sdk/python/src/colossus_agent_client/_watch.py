"""S1 watch drivers: the sync and async loops around :class:`WatchCore`.

The drivers only move bytes: open a stream from the cursor, hand each event to the core,
yield what it delivers, and on a failure or a clean close do what the core decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import grpc
import grpc.aio
from google.protobuf.message import DecodeError

from . import _convert
from ._connection import AsyncConnection, SyncConnection
from ._errors import ColossusError, ProtocolViolationError, TransportError, WatchIdleTimeoutError
from ._models import Run, RunEvent
from ._options import RetryPolicy
from ._retry import ready_async, ready_sync, retry_async, retry_sync
from ._status import from_rpc_error, is_retryable_code
from ._transport._stream_reader import messages
from ._watch_core import DELIVER, CloseAction, Resume, WatchCore
from .api.v1alpha1 import run_service_pb2, runs_pb2

log = logging.getLogger("colossus_agent_client.watch")
_EOF: Any = grpc.aio.EOF  # type: ignore[attr-defined]
_decode = run_service_pb2.WatchRunResponse.FromString


def _undecodable() -> ProtocolViolationError:
    return ProtocolViolationError(
        "the watch received a message that is not a WatchRunResponse",
        reason="RESPONSE_MALFORMED",
    )


def _same_event(earlier: bytes, replayed: bytes) -> bool:
    """Whether two different encodings carry equal events (field order may differ)."""
    return bool(_decode(earlier).event == _decode(replayed).event)


def _only_answer(call: Any) -> run_service_pb2.GetRunResponse:
    """The one answer of a ``GetRun`` sent as a stream; the call's error if it failed."""
    answers = iter(call)
    answer: run_service_pb2.GetRunResponse | None = next(answers, None)
    if answer is None or next(answers, None) is not None:
        raise ProtocolViolationError(
            "GetRun did not answer with exactly one run", reason="RESPONSE_MALFORMED"
        )
    return answer


def _new_core(run_id: str, after_sequence: int, policy: RetryPolicy) -> WatchCore[bytes]:
    return WatchCore(run_id, after_sequence, policy, equivalent=_same_event, size_of=len)


def _classified(
    core: WatchCore[bytes], event: runs_pb2.RunEvent, data: bytes, run_id: str, sequence: int
) -> RunEvent | None:
    """Any event but the next output delta in order: the core's full classification.

    The converted event when the core delivers it; ``None`` for a replay to drop. Raises
    the core's violations.
    """
    kind = event.WhichOneof("payload")
    verdict = core.on_event(run_id, sequence, data, terminal=kind == "terminated", size=len(data))
    return _convert.run_event(event, kind, run_id, sequence) if verdict is DELIVER else None


@dataclass(frozen=True, slots=True)
class ReconnectInfo:
    """What ``on_reconnect`` receives before the watch opens its stream again."""

    run_id: str
    """The watched run."""
    attempt: int
    """1 for the first reconnect since the last delivered event."""
    delay: float
    """Seconds the watch waits before reconnecting."""
    after_sequence: int
    """The cursor the new stream starts after."""
    cause: ColossusError | None
    """The retryable failure, or ``None`` after a clean close of a still-running run."""


OnReconnect = Callable[[ReconnectInfo], None]


class SyncBackend(Protocol):
    def connection(self) -> SyncConnection: ...


class AsyncBackend(Protocol):
    async def connection(self) -> AsyncConnection: ...


def _reconnect_info(
    core: WatchCore[Any], resume: Resume, cause: ColossusError | None
) -> ReconnectInfo:
    return ReconnectInfo(
        run_id=core.run_id,
        attempt=resume.attempt,
        delay=resume.delay,
        after_sequence=resume.after_sequence,
        cause=cause,
    )


def _exhausted(cause: ColossusError | None) -> ColossusError:
    if cause is not None:
        return cause
    return TransportError(
        "the watch kept closing before the run ended", reason="WATCH_RECONNECTS_EXHAUSTED"
    )


class _IdleWatchdog:
    """Cancels the current sync stream when no event arrived for ``idle`` seconds."""

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self.fired = False
        self.last_activity = time.monotonic()
        self._call: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="colossus-watch-idle", daemon=True)
        self._thread.start()

    def arm(self, call: Any) -> None:
        self._call = call
        self.last_activity = time.monotonic()

    def _run(self) -> None:
        while not self._stop.is_set():
            remaining = self.last_activity + self.idle - time.monotonic()
            if remaining <= 0:
                self.fired = True
                if self._call is not None:
                    self._call.cancel()
                return
            self._stop.wait(remaining)

    def stop(self) -> None:
        self._stop.set()


class Watch:
    """A run's events, each delivered once and in sequence order; iterate it.

    Created by ``client.runs.watch(...)``. Iterating yields :class:`RunEvent` objects
    until the run's terminal event, reconnecting after transient failures from the last
    delivered event, and ends only once the worker confirms the run ended there. Use it
    as a context manager or call :meth:`close`. ``last_sequence`` is the cursor of the
    last delivered event: another process can resume with
    ``runs.watch(run_id, after_sequence=watch.last_sequence)``. Closing a watch never
    cancels the run.

    Iterating raises these errors.

    Raises:
        WatchGapError: the worker skipped a sequence, so events were lost.
        ProtocolViolationError: the worker broke the stream's rules: a replay with other
            content, an event of another run or after the terminal event, a message that
            does not decode, or a close its ``GetRun`` answer contradicts.
        WatchIdleTimeoutError: no event arrived within ``idle_timeout``.
        TransportError: the worker stayed unreachable beyond the retry policy.
        TrustError: a reconnect met a worker that failed the connection's trust checks.
        ApiError: the worker refused the watch or the closing ``GetRun`` (for example
            ``NotFoundError``, ``PermissionDeniedError``); such a refusal is never retried.
        ClientClosedError: the client was closed.
    """

    def __init__(
        self,
        backend: SyncBackend,
        run_id: str,
        *,
        after_sequence: int,
        policy: RetryPolicy,
        on_reconnect: OnReconnect | None,
        idle_timeout: float | None,
    ) -> None:
        self._backend = backend
        self._core = _new_core(run_id, after_sequence, policy)
        self._policy = policy
        self._on_reconnect = on_reconnect
        self._idle_timeout = idle_timeout
        self._call: Any = None
        self._closed = False
        # The generator refers to this watch, so the watch holds it weakly: a strong
        # reference back would make a cycle that keeps the call open after a loop is left
        # with ``break`` until the cycle collector runs. Dropped, the generator closes at
        # once and its ``finally`` cancels the call. ``__next__`` keeps its own.
        self._iterator: weakref.ref[Iterator[RunEvent]] | None = None
        self._next: Iterator[RunEvent] | None = None
        self._final_run: Run | None = None

    @property
    def run_id(self) -> str:
        """The watched run."""
        return self._core.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the last delivered event (the resume cursor)."""
        return self._core.last_sequence

    @property
    def final_run(self) -> Run | None:
        """The ended run as ``GetRun`` confirmed it when the iteration ended by itself
        (after the terminal event); ``None`` until then, or if the watch failed or was
        closed early."""
        return self._final_run

    def __iter__(self) -> Iterator[RunEvent]:
        """The events; iterating the watch again continues after the last delivered event."""
        events = self._iterator() if self._iterator is not None else None
        if events is None:
            events = self._events()
            self._iterator = weakref.ref(events)
        return events

    def __next__(self) -> RunEvent:
        """The next event; raises ``StopIteration`` after the terminal one (see the class)."""
        if self._next is None:
            self._next = iter(self)
        return next(self._next)

    def __enter__(self) -> Watch:
        """Returns the watch itself; leaving the block closes it."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Closes the watch (the run keeps going)."""
        self.close()

    def close(self) -> None:
        """Stops the stream; the run keeps going. Safe to call more than once, and from
        another thread while the watch is being iterated (the iteration then ends)."""
        self._closed = True
        call = self._call
        if call is not None:
            call.cancel()
        iterator = self._iterator
        events = iterator() if iterator is not None else None
        if events is not None:
            # From another thread the generator may be running; cancelling the call
            # above already makes it return.
            with contextlib.suppress(ValueError):
                events.close()  # type: ignore[attr-defined]

    def _start_get_run(self, conn: SyncConnection) -> Any:
        """Sends the closing ``GetRun`` now, once the terminal event was delivered.

        A terminal run never changes again, so this answer is the one a ``GetRun`` sent
        after the stream's close would get; sending it as soon as the caller asks for more
        overlaps its round trip with the end of the stream (a caller that stops at the
        terminal event sends none). It goes out as a one-answer stream
        (``get_run_in_place``), read later on this thread without a grpcio polling thread.
        ``None`` when it cannot be sent (the ordinary call then runs).
        """
        try:
            return conn.get_run_in_place(
                run_service_pb2.GetRunRequest(run_id=self._core.run_id),
                timeout=conn.options.timeout,
                metadata=conn.metadata(),
            )
        except ValueError:  # the channel closed meanwhile
            return None

    def _get_run(self, started: Any = None) -> Run:
        """``GetRun`` under the read retry policy; ``started`` is its first attempt if sent."""
        first = [started] if started is not None else []

        def attempt() -> Run:
            if first:
                return _convert.run(_only_answer(first.pop()).run)
            conn = self._backend.connection()
            response = conn.runs.GetRun(
                run_service_pb2.GetRunRequest(run_id=self._core.run_id),
                timeout=conn.options.timeout,
                metadata=conn.metadata(),
            )
            return _convert.run(response.run)

        return retry_sync(
            attempt,
            self._policy,
            what="GetRun",
            ready=ready_sync(self._backend),
        )

    def _pause(self, resume: Resume | None, cause: ColossusError | None) -> int:
        """Waits as the core's resume plan says; returns the plan's cursor, which the
        reopened stream starts after (never another: the plan is the one resume rule)."""
        if resume is None:
            raise _exhausted(cause)
        info = _reconnect_info(self._core, resume, cause)
        log.info(
            "watch %s reconnecting after sequence %d (attempt %d, %.2f s)",
            info.run_id,
            info.after_sequence,
            info.attempt,
            info.delay,
        )
        if self._on_reconnect is not None:
            self._on_reconnect(info)
        time.sleep(resume.delay)
        # While the worker is unreachable (a restart), wait for it within the elapsed
        # budget instead of spending reconnect attempts on refused connections.
        if not self._closed and not self._backend.connection().wait_ready(resume.ready_timeout):
            raise _exhausted(cause)
        return resume.after_sequence

    def _events(self) -> Iterator[RunEvent]:
        core = self._core
        admit_next, delta_event, decode = core.admit_next, _convert.output_delta_event, _decode
        watchdog = _IdleWatchdog(self._idle_timeout) if self._idle_timeout else None
        closing_get_run: Any = None
        # The first stream starts after the last delivered event; a reopened one after the
        # cursor of the core's resume plan (see _pause).
        after_sequence = core.last_sequence
        try:
            while not self._closed:
                conn = self._backend.connection()
                request = run_service_pb2.WatchRunRequest(
                    run_id=core.run_id, after_sequence=after_sequence
                )
                call: Any = conn.watch_run_encoded(request, metadata=conn.metadata())
                self._call = call
                if watchdog is not None:
                    watchdog.arm(call)
                try:
                    for data in messages(call):
                        event = decode(data).event
                        if watchdog is not None:
                            watchdog.last_activity = time.monotonic()
                        run_id, sequence = event.run_id, event.sequence
                        # The common event first: the next output delta in order, which the
                        # core admits without its other checks (HasField is cheaper than
                        # WhichOneof). Each driver repeats these lines to save a call.
                        if event.HasField("output_delta") and admit_next(
                            run_id, sequence, data, len(data)
                        ):
                            yield delta_event(event, run_id, sequence)
                            continue
                        delivered = _classified(core, event, data, run_id, sequence)
                        if delivered is not None:
                            yield delivered
                            if core.finished_stream:
                                closing_get_run = self._start_get_run(conn)
                except DecodeError:
                    raise _undecodable() from None
                except grpc.RpcError as exc:
                    if watchdog is not None and watchdog.fired:
                        raise WatchIdleTimeoutError(
                            f"no event for {self._idle_timeout} s", reason="WATCH_IDLE_TIMEOUT"
                        ) from None
                    if self._closed:
                        return
                    error = from_rpc_error(exc)
                    if error.code is grpc.StatusCode.CANCELLED:
                        # Cancelled by the client's close: connection() raises ClientClosedError.
                        self._backend.connection()
                    if not is_retryable_code(error.code):
                        raise error from None
                    after_sequence = self._pause(core.on_retryable_failure(), error)
                    continue
                finally:
                    self._call = None
                    call.cancel()
                if self._closed:
                    return
                # A clean close proves nothing until GetRun agrees (S1).
                started, closing_get_run = closing_get_run, None
                confirmed = self._get_run(started)
                if core.on_clean_close(confirmed) is CloseAction.COMPLETE:
                    self._final_run = confirmed
                    return
                after_sequence = self._pause(core.on_retryable_failure(), None)
        finally:
            if closing_get_run is not None:
                closing_get_run.cancel()
            if watchdog is not None:
                watchdog.stop()


class AsyncWatch:
    """The asyncio twin of :class:`Watch`: ``async for event in watch``.

    Created by ``client.runs.watch(...)`` on an :class:`AsyncClient`; the same delivery
    rules, reconnects and errors as :class:`Watch`. Use it as an async context manager
    or await :meth:`close`.

    Iterating raises these errors.

    Raises:
        WatchGapError: the worker skipped a sequence, so events were lost.
        ProtocolViolationError: the worker broke the stream's rules: a replay with other
            content, an event of another run or after the terminal event, a message that
            does not decode, or a close its ``GetRun`` answer contradicts.
        WatchIdleTimeoutError: no event arrived within ``idle_timeout``.
        TransportError: the worker stayed unreachable beyond the retry policy.
        TrustError: a reconnect met a worker that failed the connection's trust checks.
        ApiError: the worker refused the watch or the closing ``GetRun`` (for example
            ``NotFoundError``, ``PermissionDeniedError``); such a refusal is never retried.
        ClientClosedError: the client was closed.
    """

    def __init__(
        self,
        backend: AsyncBackend,
        run_id: str,
        *,
        after_sequence: int,
        policy: RetryPolicy,
        on_reconnect: OnReconnect | None,
        idle_timeout: float | None,
    ) -> None:
        self._backend = backend
        self._core = _new_core(run_id, after_sequence, policy)
        self._policy = policy
        self._on_reconnect = on_reconnect
        self._idle_timeout = idle_timeout
        self._call: Any = None
        self._closed = False
        # Held weakly for the reason given in Watch: an async generator dropped by a loop
        # left with ``break`` is then closed by the event loop, which cancels the call.
        self._iterator: weakref.ref[AsyncIterator[RunEvent]] | None = None
        self._next: AsyncIterator[RunEvent] | None = None
        self._final_run: Run | None = None

    @property
    def run_id(self) -> str:
        """The watched run."""
        return self._core.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the last delivered event (the resume cursor)."""
        return self._core.last_sequence

    @property
    def final_run(self) -> Run | None:
        """The ended run as ``GetRun`` confirmed it when the iteration ended by itself
        (after the terminal event); ``None`` until then, or if the watch failed or was
        closed early."""
        return self._final_run

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        """The events; iterating the watch again continues after the last delivered event."""
        events = self._iterator() if self._iterator is not None else None
        if events is None:
            events = self._events()
            self._iterator = weakref.ref(events)
        return events

    async def __anext__(self) -> RunEvent:
        """The next event; raises ``StopAsyncIteration`` after the terminal one."""
        if self._next is None:
            self._next = self.__aiter__()
        return await self._next.__anext__()

    async def __aenter__(self) -> AsyncWatch:
        """Returns the watch itself; leaving the block closes it."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Closes the watch (the run keeps going)."""
        await self.close()

    async def close(self) -> None:
        """Stops the stream; the run keeps going. Safe to call more than once."""
        self._closed = True
        call = self._call
        if call is not None:
            call.cancel()
        iterator = self._iterator
        events = iterator() if iterator is not None else None
        if events is not None:
            with contextlib.suppress(RuntimeError):
                await events.aclose()  # type: ignore[attr-defined]

    def _start_get_run(self, conn: AsyncConnection) -> Any:
        """The closing ``GetRun``, sent at the terminal event (see ``Watch._start_get_run``)."""
        return conn.runs.GetRun(
            run_service_pb2.GetRunRequest(run_id=self._core.run_id),
            timeout=conn.options.timeout,
            metadata=conn.metadata(),
        )

    async def _get_run(self, started: Any = None) -> Run:
        """``GetRun`` under the read retry policy; ``started`` is its first attempt if sent."""
        first = [started] if started is not None else []

        async def attempt() -> Run:
            if first:
                return _convert.run((await first.pop()).run)
            conn = await self._backend.connection()
            response = await conn.runs.GetRun(
                run_service_pb2.GetRunRequest(run_id=self._core.run_id),
                timeout=conn.options.timeout,
                metadata=conn.metadata(),
            )
            return _convert.run(response.run)

        return await retry_async(
            attempt, self._policy, what="GetRun", ready=ready_async(self._backend)
        )

    async def _pause(self, resume: Resume | None, cause: ColossusError | None) -> int:
        """See ``Watch._pause``: returns the cursor of the core's resume plan."""
        if resume is None:
            raise _exhausted(cause)
        info = _reconnect_info(self._core, resume, cause)
        log.info(
            "watch %s reconnecting after sequence %d (attempt %d, %.2f s)",
            info.run_id,
            info.after_sequence,
            info.attempt,
            info.delay,
        )
        if self._on_reconnect is not None:
            self._on_reconnect(info)
        await asyncio.sleep(resume.delay)
        if not self._closed:
            connection = await self._backend.connection()
            if not await connection.wait_ready(resume.ready_timeout):
                raise _exhausted(cause)
        return resume.after_sequence

    async def _events(self) -> AsyncIterator[RunEvent]:
        core = self._core
        admit_next, delta_event, decode = core.admit_next, _convert.output_delta_event, _decode
        idle = self._idle_timeout
        closing_get_run: Any = None
        # As in Watch._events: the plan's cursor for every reopened stream.
        after_sequence = core.last_sequence
        try:
            while not self._closed:
                conn = await self._backend.connection()
                request = run_service_pb2.WatchRunRequest(
                    run_id=core.run_id, after_sequence=after_sequence
                )
                call: Any = conn.watch_run_encoded(request, metadata=conn.metadata())
                self._call = call
                try:
                    while True:
                        if idle:
                            try:
                                data = await asyncio.wait_for(call.read(), idle)
                            except TimeoutError:
                                raise WatchIdleTimeoutError(
                                    f"no event for {idle} s", reason="WATCH_IDLE_TIMEOUT"
                                ) from None
                        else:
                            data = await call.read()
                        if data is _EOF:
                            break
                        event = decode(data).event
                        run_id, sequence = event.run_id, event.sequence
                        # The common event first (see Watch._events).
                        if event.HasField("output_delta") and admit_next(
                            run_id, sequence, data, len(data)
                        ):
                            yield delta_event(event, run_id, sequence)
                            continue
                        delivered = _classified(core, event, data, run_id, sequence)
                        if delivered is not None:
                            yield delivered
                            if core.finished_stream:
                                closing_get_run = self._start_get_run(conn)
                except DecodeError:
                    raise _undecodable() from None
                except grpc.RpcError as exc:
                    if self._closed:
                        return
                    error = from_rpc_error(exc)
                    if not is_retryable_code(error.code):
                        raise error from None
                    after_sequence = await self._pause(core.on_retryable_failure(), error)
                    continue
                finally:
                    self._call = None
                    call.cancel()
                if self._closed:
                    return
                started, closing_get_run = closing_get_run, None
                confirmed = await self._get_run(started)
                if core.on_clean_close(confirmed) is CloseAction.COMPLETE:
                    self._final_run = confirmed
                    return
                after_sequence = await self._pause(core.on_retryable_failure(), None)
        finally:
            if closing_get_run is not None:
                closing_get_run.cancel()
