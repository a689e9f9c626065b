"""``client.runs``: create, get, list, watch, cancel and respond (sync and async).

Reads (get, list, watch) retry ``UNAVAILABLE`` under the client's policy. Mutations
(create, cancel, respond) run exactly once; an ambiguous failure raises
:class:`OutcomeUnknownError`. Every create carries an idempotency key, generated once per
call when the caller gives none, and returned on the result and on every error (S2).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from . import _convert
from . import _models as m
from ._connection import (
    DEFAULT,
    Session,
    call_mutation_async,
    call_mutation_sync,
    ready_async,
    ready_sync,
    retry_async,
    retry_sync,
)
from ._errors import ColossusError, InvalidArgumentError
from ._options import RetryPolicy
from ._pagination import AsyncRunPager, RunPager
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
from ._watch import AsyncBackend, AsyncWatch, OnReconnect, SyncBackend, Watch
from .api.v1alpha1 import run_service_pb2

log = logging.getLogger("colossus.runs")


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
        or after_sequence < 0
    ):
        raise InvalidArgumentError(
            "after_sequence must be a non-negative integer",
            reason="FIELD_INVALID",
            metadata={"field": "after_sequence"},
        )
    return after_sequence


def _key(idempotency_key: str | None) -> str:
    return (
        check_idempotency_key(idempotency_key)
        if idempotency_key is not None
        else new_idempotency_key()
    )


class Runs:
    """Sync run operations; reach them as ``client.runs``."""

    def __init__(self, backend: SyncBackend, policy: RetryPolicy) -> None:
        self._backend = backend
        self._policy = policy

    def create(
        self,
        input: Sequence[InputLike] | str,
        *,
        idempotency_key: str | None = None,
        mode: m.RunMode = m.RunMode.EXECUTE,
        research: m.ResearchOptions | None = None,
        role: str | None = None,
        max_turns: int = 0,
        session_id: str | None = None,
        end_user_id: str | None = None,
        plan_action: m.PlanAction | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        timeout: float | None = DEFAULT,
    ) -> m.CreateRunResult:
        """Creates a run, or returns the one an identical earlier call with the same key made.

        Never retried automatically. On :class:`OutcomeUnknownError`, call again with
        ``idempotency_key=error.idempotency_key``.
        """
        key = _key(idempotency_key)
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
        response = call_mutation_sync(
            conn.runs.CreateRun, request, conn, conn.timeout(timeout), idempotency_key=key
        )
        return _created(response, key)

    def get(self, run_id: str, *, timeout: float | None = DEFAULT) -> m.Run:
        """Returns one run."""
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
        statuses: Iterable[m.RunStatus] = (),
        page_size: int = 0,
        timeout: float | None = DEFAULT,
    ) -> RunPager:
        """Iterates the application's runs, newest first, across every page."""
        conn = self._backend.connection()
        template = build_list_runs(conn.server_info, statuses, page_size)

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

        return RunPager(fetch)

    def watch(
        self,
        run_id: str,
        *,
        after_sequence: int = 0,
        on_reconnect: OnReconnect | None = None,
        idle_timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> Watch:
        """Streams the run's events after ``after_sequence``, deduplicated and gap-checked."""
        return Watch(
            self._backend,
            check_id(run_id, "run_id"),
            after_sequence=_check_after_sequence(after_sequence),
            policy=retry or self._policy,
            on_reconnect=on_reconnect,
            idle_timeout=idle_timeout,
        )

    def cancel(self, run_id: str, *, timeout: float | None = DEFAULT) -> m.Run:
        """Asks the run to stop (idempotent on the worker; never retried by the SDK)."""
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
        """Answers the run's pending prompt or approval (never retried)."""
        conn = self._backend.connection()
        request = build_respond(conn.server_info, run_id, interaction_id, answer)
        response = call_mutation_sync(
            conn.runs.RespondInteraction, request, conn, conn.timeout(timeout)
        )
        return _convert.run(response.run)


class AsyncRuns:
    """The async twin of :class:`Runs`; reach it as ``client.runs``."""

    def __init__(self, backend: AsyncBackend, policy: RetryPolicy) -> None:
        self._backend = backend
        self._policy = policy

    async def create(
        self,
        input: Sequence[InputLike] | str,
        *,
        idempotency_key: str | None = None,
        mode: m.RunMode = m.RunMode.EXECUTE,
        research: m.ResearchOptions | None = None,
        role: str | None = None,
        max_turns: int = 0,
        session_id: str | None = None,
        end_user_id: str | None = None,
        plan_action: m.PlanAction | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        timeout: float | None = DEFAULT,
    ) -> m.CreateRunResult:
        """See :meth:`Runs.create`."""
        key = _key(idempotency_key)
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
        response = await call_mutation_async(
            conn.runs.CreateRun, request, conn, conn.timeout(timeout), idempotency_key=key
        )
        return _created(response, key)

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
        statuses: Iterable[m.RunStatus] = (),
        page_size: int = 0,
        timeout: float | None = DEFAULT,
    ) -> AsyncRunPager:
        """See :meth:`Runs.list`: ``async for run in client.runs.list()``.

        The filter is checked against the worker's limits when the first page is fetched.
        """
        wanted = tuple(statuses)

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

        return AsyncRunPager(fetch)

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
        return AsyncWatch(
            self._backend,
            check_id(run_id, "run_id"),
            after_sequence=_check_after_sequence(after_sequence),
            policy=retry or self._policy,
            on_reconnect=on_reconnect,
            idle_timeout=idle_timeout,
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
