"""``client.runs``: create, get, list, watch, cancel and respond (sync and async).

Reads (get, list, watch) retry ``UNAVAILABLE`` under the client's policy. Mutations
(create, cancel, respond) run exactly once; an ambiguous failure raises
:class:`OutcomeUnknownError`. Every create carries an idempotency key, generated once per
call when the caller gives none, and returned on the result and on every error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Iterator, Sequence

from . import _convert
from . import _models as m
from ._coerce import enum_arg, enum_args
from ._connection import DEFAULT, Session, call_mutation_async, call_mutation_sync
from ._errors import ColossusError, InvalidArgumentError, ResourceExhaustedError
from ._options import RetryPolicy
from ._outcome import AsyncTextStream, TextStream, wait_async, wait_sync
from ._pagination import AsyncRunPager, RunPager
from ._rate_limit import check_rate_limit_retries, rate_limit_wait
from ._requests import (
    Answer,
    InputLike,
    build_create_run,
    build_list_runs,
    build_respond,
    check_id,
    check_idempotency_key,
    new_idempotency_key,
)
from ._retry import ready_async, ready_sync, retry_async, retry_sync
from ._watch import AsyncBackend, AsyncWatch, OnReconnect, SyncBackend, Watch
from .api.v1alpha1 import run_service_pb2

log = logging.getLogger("colossus_agent_client.runs")

# Sequences are uint64 on the wire.
_MAX_SEQUENCE = 2**64 - 1
_MAX_PAGE_TOKEN = 4096


def _create_request(
    session: Session,
    key: str,
    input: Sequence[InputLike] | str,
    mode: m.RunMode,
    research: m.ResearchOptions | None,
    role: str | None,
    max_turns: int,
    session_id: str | None,
    end_user_id: str | None,
    plan_action: m.PlanAction | None,
    traceparent: str | None,
    tracestate: str | None,
) -> run_service_pb2.CreateRunRequest:
    trace = (traceparent, tracestate) if traceparent is not None else session.trace()
    try:
        return build_create_run(
            session.server_info,
            idempotency_key=key,
            input=input,
            mode=mode,
            research=research,
            role=role,
            max_turns=max_turns,
            session_id=session_id,
            end_user_id=end_user_id,
            plan_action=plan_action,
            trace=trace,
        )
    except ColossusError as exc:
        exc.idempotency_key = key
        raise


@contextlib.contextmanager
def _carrying(key: str) -> Iterator[None]:
    """Puts ``key`` on an SDK error raised inside that carries none yet."""
    try:
        yield
    except ColossusError as exc:
        if exc.idempotency_key is None:
            exc.idempotency_key = key
        raise


def _created(response: run_service_pb2.CreateRunResponse, key: str) -> m.CreateRunResult:
    result = m.CreateRunResult(
        run=_convert.run(response.run), replayed=response.replayed, idempotency_key=key
    )
    log.info(
        "run %s %s (idempotency_key=%s)",
        result.run.run_id,
        "replayed" if result.replayed else "created",
        key,
    )
    return result


def _page(response: run_service_pb2.ListRunsResponse) -> m.RunPage:
    return m.RunPage(
        runs=tuple(_convert.run(r) for r in response.runs), next_page_token=response.next_page_token
    )


def _check_after_sequence(after_sequence: int) -> int:
    if (
        not isinstance(after_sequence, int)
        or isinstance(after_sequence, bool)
        or not 0 <= after_sequence <= _MAX_SEQUENCE
    ):
        raise InvalidArgumentError(
            f"after_sequence must be an integer from 0 to {_MAX_SEQUENCE} (2**64 - 1)",
            reason="FIELD_INVALID",
            metadata={"field": "after_sequence"},
        )
    return after_sequence


def _check_page_token(token: str) -> str:
    if not isinstance(token, str):
        raise TypeError(f"page_token must be a str, not {type(token).__name__}")
    if len(token) > _MAX_PAGE_TOKEN or not token.isascii() or not token.isprintable():
        raise InvalidArgumentError(
            f"page_token must be printable ASCII of at most {_MAX_PAGE_TOKEN} characters "
            "(a next_page_token from an earlier page)",
            reason="PAGE_TOKEN_INVALID",
            metadata={"field": "page_token"},
        )
    return token


def _key(idempotency_key: str | None) -> str:
    return (
        check_idempotency_key(idempotency_key)
        if idempotency_key is not None
        else new_idempotency_key()
    )


class Runs:
    """Sync run operations; reach them as ``client.runs`` (never constructed directly).

    Reads (:meth:`get`, :meth:`list`, :meth:`watch`) retry a worker that is briefly
    unavailable under the client's :class:`RetryPolicy`. Mutations (:meth:`create`,
    :meth:`cancel`, :meth:`respond`) are sent once; when their effect is unknown they raise
    :class:`OutcomeUnknownError`.
    """

    def __init__(self, backend: SyncBackend, policy: RetryPolicy) -> None:
        self._backend = backend
        self._policy = policy

    def create(
        self,
        input: Sequence[InputLike] | str,
        *,
        idempotency_key: str | None = None,
        mode: m.RunMode | str = m.RunMode.EXECUTE,
        research: m.ResearchOptions | None = None,
        role: str | None = None,
        max_turns: int = 0,
        session_id: str | None = None,
        end_user_id: str | None = None,
        plan_action: m.PlanAction | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        timeout: float | None = DEFAULT,
        rate_limit_retries: int = 0,
    ) -> m.CreateRunResult:
        """Creates a run, or returns the one an identical earlier call with the same key made.

        Args:
            input: the run's input: a string, or a sequence of strings, :class:`TextPart`,
                :class:`ArtifactPart` or uploaded :class:`Artifact` objects.
            idempotency_key: your key (1-128 of ``[A-Za-z0-9._:-]``); one is generated
                when omitted. It is on the result and on every error.
            mode: a :class:`RunMode` or its name (``"plan"``); research needs ``research``.
            research: depth and evidence lanes of a research run.
            role: the logical role to run as (the worker's default when omitted).
            max_turns: 0 for the worker's default, else at most its advertised limit.
            session_id: continue an existing session; omitted, the worker assigns one.
            end_user_id: your own correlation ID for the end user (never used for access).
            plan_action: revise or execute a Draft plan (needs ``plans.continue``).
            traceparent: W3C trace context for this call only, with ``tracestate``.
            timeout: seconds for the call; the client's default when omitted.
            rate_limit_retries: how many times to try again, with the same key, when the
                worker refuses the create under its create rate limit (``CREATE_RATE_LIMIT``),
                each after the refusal's ``retry_delay`` (the advertised refill time when
                the worker sent none). 0 (the default) never retries.

        Returns:
            :class:`CreateRunResult`: the run, whether it was ``replayed``, and the key.

        Raises:
            OutcomeUnknownError: the call may or may not have created the run; call again
                with ``idempotency_key=error.idempotency_key``.
            InvalidArgumentError, CapabilityMissingError, ResourceExhaustedError,
            IdempotencyConflictError, AuthenticationError, PermissionDeniedError: refused,
                locally or by the worker; nothing was created.

        Never retried automatically except as ``rate_limit_retries`` allows (a rate-limit
        refusal means nothing was created, and the same key makes the retry safe).
        """
        key = _key(idempotency_key)
        # Every refusal of the create carries its key, a local one before the request too.
        with _carrying(key):
            retries = check_rate_limit_retries(rate_limit_retries)
            mode = enum_arg(mode, m.RunMode, "mode")
            conn = self._backend.connection()
            request = _create_request(
                conn,
                key,
                input,
                mode,
                research,
                role,
                max_turns,
                session_id,
                end_user_id,
                plan_action,
                traceparent,
                tracestate,
            )
        while True:
            try:
                response = call_mutation_sync(
                    conn.runs.CreateRun, request, conn, conn.timeout(timeout), idempotency_key=key
                )
                return _created(response, key)
            except ResourceExhaustedError as exc:
                wait = rate_limit_wait(exc, conn.server_info) if retries else None
                if wait is None:
                    raise
                retries -= 1
                log.info("create rate-limited; retrying key %s in %.2f s", key, wait)
            time.sleep(wait)
            conn = self._backend.connection()

    def get(self, run_id: str, *, timeout: float | None = DEFAULT) -> m.Run:
        """Returns one run as the worker has it now.

        Args:
            run_id: the run's ID (from :meth:`create`, :meth:`list` or an event).
            timeout: seconds for each attempt; the client's default when omitted.

        Returns:
            The :class:`Run`, with its status, result and any pending interaction.

        Raises:
            InvalidArgumentError: ``run_id`` is not a well-formed ID.
            NotFoundError: no run with this ID is visible to this application.
            AuthenticationError, PermissionDeniedError: the bearer or its grant was refused.
            TransportError: the worker stayed unreachable beyond the retry policy.
            ClientClosedError: the client was closed.
        """
        request = run_service_pb2.GetRunRequest(run_id=check_id(run_id, "run_id"))

        def attempt() -> m.Run:
            conn = self._backend.connection()
            response = conn.runs.GetRun(
                request, timeout=conn.timeout(timeout), metadata=conn.metadata()
            )
            return _convert.run(response.run)

        return retry_sync(attempt, self._policy, what="GetRun", ready=ready_sync(self._backend))

    def list(
        self,
        *,
        statuses: Iterable[m.RunStatus | str] = (),
        page_size: int = 0,
        page_token: str = "",
        timeout: float | None = DEFAULT,
    ) -> RunPager:
        """Iterates the application's runs, newest first, across every page.

        Pages are fetched lazily while you iterate; each fetch is a read with retries.

        Args:
            statuses: only runs in these statuses (members or names, e.g. ``["SUCCEEDED"]``).
            page_size: runs per page (0: the worker's default; it caps the value).
            page_token: a ``RunPage.next_page_token`` from an earlier listing with the same
                filter, to resume it.
            timeout: seconds for each page's call.

        Returns:
            A :class:`RunPager`: iterate it for runs, or call ``.pages()`` for pages.

        Raises:
            InvalidArgumentError: a bad filter or page size (locally), or a token the worker
                rejects (``PAGE_TOKEN_INVALID``, when the first page is fetched).
            TypeError: a status is neither a :class:`RunStatus` nor one of its names, or
                ``page_token`` is not a ``str``.
            ProtocolViolationError: while iterating, the worker repeated an empty page
                with the same token.
            TransportError, AuthenticationError, PermissionDeniedError: while iterating, as
                for :meth:`get`.
        """
        wanted = enum_args(statuses, m.RunStatus, "statuses")
        token = _check_page_token(page_token)
        conn = self._backend.connection()
        template = build_list_runs(conn.server_info, wanted, page_size)

        def fetch(token: str) -> m.RunPage:
            request = run_service_pb2.ListRunsRequest()
            request.CopyFrom(template)
            request.page_token = token

            def attempt() -> m.RunPage:
                c = self._backend.connection()
                return _page(
                    c.runs.ListRuns(request, timeout=c.timeout(timeout), metadata=c.metadata())
                )

            return retry_sync(
                attempt, self._policy, what="ListRuns", ready=ready_sync(self._backend)
            )

        return RunPager(fetch, token)

    def watch(
        self,
        run_id: str,
        *,
        after_sequence: int = 0,
        on_reconnect: OnReconnect | None = None,
        idle_timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> Watch:
        """Streams the run's events after ``after_sequence``, in order and each once.

        The stream reconnects by itself after a retryable failure, resuming after the
        last delivered event; a replayed event is dropped and a skipped sequence is an
        error. Iteration ends after the run's terminal event. Nothing is sent until you
        start iterating; close the watch (or use ``with``) to stop early.

        Args:
            run_id: the run to follow.
            after_sequence: deliver only events with a larger sequence (0: from the
                start); pass ``watch.last_sequence`` of an earlier watch to resume it.
            on_reconnect: called with a :class:`ReconnectInfo` before each reconnect.
            idle_timeout: seconds without an event after which the watch fails with
                :class:`WatchIdleTimeoutError` (``None``: wait forever).
            retry: the reconnect policy for this watch; the client's when omitted.

        Returns:
            A :class:`Watch`: iterate it for :class:`RunEvent` objects.

        Raises:
            InvalidArgumentError: ``run_id`` is malformed or ``after_sequence`` is not an
                integer from 0 to 2**64 - 1 (raised here, before any request).
            WatchGapError, ProtocolViolationError: while iterating, the worker skipped a
                sequence or altered a replayed event.
            NotFoundError, TransportError, WatchIdleTimeoutError: while iterating, the run
                is not visible, reconnects ran out, or the stream stayed silent too long.
        """
        return Watch(
            self._backend,
            check_id(run_id, "run_id"),
            after_sequence=_check_after_sequence(after_sequence),
            policy=retry or self._policy,
            on_reconnect=on_reconnect,
            idle_timeout=idle_timeout,
        )

    def wait(
        self,
        run_id: str,
        *,
        on_reconnect: OnReconnect | None = None,
        idle_timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> m.Run:
        """Waits until the run has ended and returns it (status and result).

        Reads the run; if it has not ended, watches it from its current sequence to the
        terminal event, with every guarantee of :meth:`watch`, and returns the run
        the watch's closing ``GetRun`` confirmed. A run waiting for an answer keeps this
        call waiting until someone answers (use ``idle_timeout`` to bound the silence).

        Args:
            run_id: the run to wait for.
            on_reconnect: as for :meth:`watch`.
            idle_timeout: as for :meth:`watch`: seconds without an event before
                :class:`WatchIdleTimeoutError` (``None``: wait forever).
            retry: the read and reconnect policy; the client's when omitted.

        Returns:
            The ended :class:`Run`.

        Raises:
            The errors of :meth:`get` and of iterating a :meth:`watch`.
        """
        run = self.get(run_id)
        if run.status.is_terminal:
            return run
        watch = self.watch(
            run_id,
            after_sequence=run.last_sequence,
            on_reconnect=on_reconnect,
            idle_timeout=idle_timeout,
            retry=retry,
        )
        return wait_sync(watch)

    def text_stream(
        self,
        run_id: str,
        *,
        after_sequence: int = 0,
        on_reconnect: OnReconnect | None = None,
        idle_timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> TextStream:
        """The run's output text as it is released: ``for text in runs.text_stream(id)``.

        A :meth:`watch` that yields only the text of :class:`OutputDelta` events, with the
        same delivery rules and errors; it ends after the terminal event, when
        ``TextStream.final_run`` holds the ended run.

        Args:
            run_id: the run to read.
            after_sequence: yield only the text of events after this sequence (0: all).
            on_reconnect: as for :meth:`watch`.
            idle_timeout: as for :meth:`watch`.
            retry: the reconnect policy; the client's when omitted.

        Returns:
            A :class:`TextStream`: iterate it for ``str`` pieces.

        Raises:
            InvalidArgumentError: as for :meth:`watch`, before any request.
            WatchGapError, ProtocolViolationError, TransportError, WatchIdleTimeoutError,
            NotFoundError: while iterating, as for :meth:`watch`.
        """
        return TextStream(
            self.watch(
                run_id,
                after_sequence=after_sequence,
                on_reconnect=on_reconnect,
                idle_timeout=idle_timeout,
                retry=retry,
            )
        )

    def cancel(self, run_id: str, *, timeout: float | None = DEFAULT) -> m.Run:
        """Asks the run to stop. Idempotent on the worker, but never retried by the SDK.

        Args:
            run_id: the run to cancel.
            timeout: seconds for the call; the client's default when omitted.

        Returns:
            The :class:`Run` after the request (usually ``CANCELLING`` or already terminal).

        Raises:
            OutcomeUnknownError: the call may or may not have reached the worker; cancelling
                again is safe.
            NotFoundError: no such run is visible to this application.
            FailedPreconditionError: the run cannot be cancelled in its current state.
            InvalidArgumentError, AuthenticationError, PermissionDeniedError: refused.
        """
        request = run_service_pb2.CancelRunRequest(run_id=check_id(run_id, "run_id"))
        conn = self._backend.connection()
        response = call_mutation_sync(conn.runs.CancelRun, request, conn, conn.timeout(timeout))
        return _convert.run(response.run)

    def respond(
        self,
        run_id: str,
        interaction_id: str,
        answer: Answer,
        *,
        timeout: float | None = DEFAULT,
    ) -> m.Run:
        """Answers the run's pending prompt or approval. Sent once, never retried.

        Args:
            run_id: the run that asked.
            interaction_id: ``run.pending_interaction.interaction_id`` (or the ID in an
                :class:`InteractionRequested` event).
            answer: a :class:`PromptAnswer` with one displayed choice, or an
                :class:`ApprovalAnswer` echoing the approval's ``binding``.
            timeout: seconds for the call; the client's default when omitted.

        Returns:
            The :class:`Run` after the answer was recorded.

        Raises:
            OutcomeUnknownError: the answer may or may not have been recorded; read the run
                to find out.
            NotFoundError: the run, or this interaction on it, is not visible.
            FailedPreconditionError: the interaction was already resolved or the run ended.
            InvalidArgumentError: the answer does not fit the interaction (wrong choice or
                binding, or a prompt answer to an approval), or a malformed ID.
            ResourceExhaustedError: the request is over the worker's size cap.
            AuthenticationError, PermissionDeniedError: the bearer or its grant was refused.
        """
        conn = self._backend.connection()
        request = build_respond(conn.server_info, run_id, interaction_id, answer)
        response = call_mutation_sync(
            conn.runs.RespondInteraction, request, conn, conn.timeout(timeout)
        )
        return _convert.run(response.run)


class AsyncRuns:
    """The async twin of :class:`Runs`; reach it as ``client.runs`` of an
    :class:`AsyncClient`. Same methods, arguments, results and errors, awaited."""

    def __init__(self, backend: AsyncBackend, policy: RetryPolicy) -> None:
        self._backend = backend
        self._policy = policy

    async def create(
        self,
        input: Sequence[InputLike] | str,
        *,
        idempotency_key: str | None = None,
        mode: m.RunMode | str = m.RunMode.EXECUTE,
        research: m.ResearchOptions | None = None,
        role: str | None = None,
        max_turns: int = 0,
        session_id: str | None = None,
        end_user_id: str | None = None,
        plan_action: m.PlanAction | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        timeout: float | None = DEFAULT,
        rate_limit_retries: int = 0,
    ) -> m.CreateRunResult:
        """See :meth:`Runs.create` (same arguments, result and errors)."""
        key = _key(idempotency_key)
        # Every refusal of the create carries its key, a local one before the request too.
        with _carrying(key):
            retries = check_rate_limit_retries(rate_limit_retries)
            mode = enum_arg(mode, m.RunMode, "mode")
            conn = await self._backend.connection()
            request = _create_request(
                conn,
                key,
                input,
                mode,
                research,
                role,
                max_turns,
                session_id,
                end_user_id,
                plan_action,
                traceparent,
                tracestate,
            )
        while True:
            try:
                response = await call_mutation_async(
                    conn.runs.CreateRun, request, conn, conn.timeout(timeout), idempotency_key=key
                )
                return _created(response, key)
            except ResourceExhaustedError as exc:
                wait = rate_limit_wait(exc, conn.server_info) if retries else None
                if wait is None:
                    raise
                retries -= 1
                log.info("create rate-limited; retrying key %s in %.2f s", key, wait)
            await asyncio.sleep(wait)
            conn = await self._backend.connection()

    async def get(self, run_id: str, *, timeout: float | None = DEFAULT) -> m.Run:
        """See :meth:`Runs.get`."""
        request = run_service_pb2.GetRunRequest(run_id=check_id(run_id, "run_id"))

        async def attempt() -> m.Run:
            conn = await self._backend.connection()
            response = await conn.runs.GetRun(
                request, timeout=conn.timeout(timeout), metadata=conn.metadata()
            )
            return _convert.run(response.run)

        return await retry_async(
            attempt, self._policy, what="GetRun", ready=ready_async(self._backend)
        )

    def list(
        self,
        *,
        statuses: Iterable[m.RunStatus | str] = (),
        page_size: int = 0,
        page_token: str = "",
        timeout: float | None = DEFAULT,
    ) -> AsyncRunPager:
        """See :meth:`Runs.list`: ``async for run in client.runs.list()``.

        The filter is checked against the worker's limits when the first page is fetched.
        """
        wanted = enum_args(statuses, m.RunStatus, "statuses")
        token = _check_page_token(page_token)

        async def fetch(token: str) -> m.RunPage:
            conn = await self._backend.connection()
            request = build_list_runs(conn.server_info, wanted, page_size)
            request.page_token = token

            async def attempt() -> m.RunPage:
                c = await self._backend.connection()
                return _page(
                    await c.runs.ListRuns(
                        request, timeout=c.timeout(timeout), metadata=c.metadata()
                    )
                )

            return await retry_async(
                attempt, self._policy, what="ListRuns", ready=ready_async(self._backend)
            )

        return AsyncRunPager(fetch, token)

    def watch(
        self,
        run_id: str,
        *,
        after_sequence: int = 0,
        on_reconnect: OnReconnect | None = None,
        idle_timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> AsyncWatch:
        """See :meth:`Runs.watch`: ``async with client.runs.watch(id) as w: async for ...``."""
        watch = AsyncWatch(
            self._backend,
            check_id(run_id, "run_id"),
            after_sequence=_check_after_sequence(after_sequence),
            policy=retry or self._policy,
            on_reconnect=on_reconnect,
            idle_timeout=idle_timeout,
        )
        # The client's backend closes the watches still open when the client closes.
        open_watches = getattr(self._backend, "watches", None)
        if open_watches is not None:
            open_watches.add(watch)
        return watch

    async def wait(
        self,
        run_id: str,
        *,
        on_reconnect: OnReconnect | None = None,
        idle_timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> m.Run:
        """See :meth:`Runs.wait`: ``run = await client.runs.wait(run_id)``."""
        run = await self.get(run_id)
        if run.status.is_terminal:
            return run
        watch = self.watch(
            run_id,
            after_sequence=run.last_sequence,
            on_reconnect=on_reconnect,
            idle_timeout=idle_timeout,
            retry=retry,
        )
        return await wait_async(watch)

    def text_stream(
        self,
        run_id: str,
        *,
        after_sequence: int = 0,
        on_reconnect: OnReconnect | None = None,
        idle_timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> AsyncTextStream:
        """See :meth:`Runs.text_stream`: ``async for text in client.runs.text_stream(id)``."""
        return AsyncTextStream(
            self.watch(
                run_id,
                after_sequence=after_sequence,
                on_reconnect=on_reconnect,
                idle_timeout=idle_timeout,
                retry=retry,
            )
        )

    async def cancel(self, run_id: str, *, timeout: float | None = DEFAULT) -> m.Run:
        """See :meth:`Runs.cancel`."""
        request = run_service_pb2.CancelRunRequest(run_id=check_id(run_id, "run_id"))
        conn = await self._backend.connection()
        response = await call_mutation_async(
            conn.runs.CancelRun, request, conn, conn.timeout(timeout)
        )
        return _convert.run(response.run)

    async def respond(
        self,
        run_id: str,
        interaction_id: str,
        answer: Answer,
        *,
        timeout: float | None = DEFAULT,
    ) -> m.Run:
        """See :meth:`Runs.respond`."""
        conn = await self._backend.connection()
        request = build_respond(conn.server_info, run_id, interaction_id, answer)
        response = await call_mutation_async(
            conn.runs.RespondInteraction, request, conn, conn.timeout(timeout)
        )
        return _convert.run(response.run)
