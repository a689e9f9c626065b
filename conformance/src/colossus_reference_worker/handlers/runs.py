"""RunService: thin adapters between the wire and the run engine."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import grpclib.const
from grpclib.server import Stream

from .._gen.colossus.api.v1alpha1 import (
    CancelRunRequest,
    CancelRunResponse,
    CreateRunRequest,
    CreateRunResponse,
    GetRunRequest,
    GetRunResponse,
    ListRunsRequest,
    ListRunsResponse,
    RespondInteractionRequest,
    RespondInteractionResponse,
    RunEvent,
    WatchRunRequest,
    WatchRunResponse,
)
from ..credentials import Principal
from ..engine import views
from ..engine.engine import RunEngine
from ..engine.run_wire import encode_run_reply
from ..wire.codec import read_request
from ..wire.guard import check_create_run, check_list_runs
from ..worker_hooks import WatchContext, WorkerHooks
from .pipeline import Pipeline

_PREFIX = "/colossus.api.v1alpha1.RunService/"


class RunService:
    def __init__(self, pipeline: Pipeline, engine: RunEngine) -> None:
        self._pipeline = pipeline
        self._engine = engine
        self._watch_calls = itertools.count(1)
        limits = pipeline.config.limits
        self._max = limits.max_request_bytes
        self._guard_create = partial(check_create_run, limits=limits)
        self._guard_list = partial(check_list_runs, limits=limits)
        self._replies_unaltered = type(pipeline.hooks).alter_reply is WorkerHooks.alter_reply

    # --- handlers --------------------------------------------------------------------------

    def _create(self, principal: Principal, req: CreateRunRequest) -> CreateRunResponse:
        creation, state, replayed = self._engine.create_run(principal, req)
        return CreateRunResponse(run=views.run(creation, state), replayed=replayed)

    def _get(self, principal: Principal, req: GetRunRequest) -> GetRunResponse | bytes:
        creation, state = self._engine.get_run(principal, req.run_id)
        if self._replies_unaltered:
            # Nobody rewrites replies: send the directly encoded bytes (the codec
            # passes them through), which is most of a GetRun poll's handler time.
            return encode_run_reply(creation, state)
        return GetRunResponse(run=views.run(creation, state))

    async def _list(self, principal: Principal, req: ListRunsRequest) -> ListRunsResponse:
        page, token = await self._engine.list_runs(
            principal, [int(s) for s in req.statuses], req.page_size, req.page_token
        )
        return ListRunsResponse(runs=[views.run(c, s) for c, s in page], next_page_token=token)

    def _cancel(self, principal: Principal, req: CancelRunRequest) -> CancelRunResponse:
        creation, state = self._engine.cancel_run(principal, req.run_id)
        return CancelRunResponse(run=views.run(creation, state))

    def _respond(self, principal: Principal, req: RespondInteractionRequest
                 ) -> RespondInteractionResponse:
        creation, state = self._engine.respond(principal, req)
        return RespondInteractionResponse(run=views.run(creation, state))

    async def _watch(self, principal: Principal, req: WatchRunRequest
                     ) -> AsyncIterator[WatchRunResponse | bytes]:
        self._engine.open_watch(principal, req.run_id, req.after_sequence)
        try:
            ctx = WatchContext(next(self._watch_calls), principal.application_id, req.run_id,
                               req.after_sequence)
            hooks = self._pipeline.hooks
            hooks.on_watch(ctx)
            if type(hooks).wrap_watch is WorkerHooks.wrap_watch:
                # Nobody rewrites the stream: send pre-encoded (often cached) frames.
                async for frames in self._engine.watch_frames(req.run_id, req.after_sequence):
                    for frame in frames:
                        yield frame
                return

            async def events() -> AsyncIterator[RunEvent]:
                async for payload in self._engine.watch(req.run_id, req.after_sequence):
                    yield views.event(req.run_id, payload)

            async for event in hooks.wrap_watch(ctx, events()):
                yield WatchRunResponse(event=event)
        finally:
            self._engine.close_watch(principal)

    # --- wiring -------------------------------------------------------------------------------

    def _reader(self, message_type: Any, guard: Any = None) -> Any:
        return lambda stream: read_request(stream, message_type, self._max, guard)

    def _unary(self, method: str, message_type: Any, handle: Any, guard: Any = None) -> Any:
        async def rpc(stream: Stream[Any, Any]) -> None:
            await self._pipeline.unary(stream, f"RunService/{method}",
                                       self._reader(message_type, guard), handle)
        return rpc

    async def _watch_rpc(self, stream: Stream[Any, Any]) -> None:
        await self._pipeline.server_stream(stream, "RunService/WatchRun",
                                           self._reader(WatchRunRequest), self._watch)

    def __mapping__(self) -> dict[str, grpclib.const.Handler]:
        unary = grpclib.const.Cardinality.UNARY_UNARY
        table = {
            "CreateRun": (CreateRunRequest, CreateRunResponse, self._create, self._guard_create),
            "GetRun": (GetRunRequest, GetRunResponse, self._get, None),
            "ListRuns": (ListRunsRequest, ListRunsResponse, self._list, self._guard_list),
            "CancelRun": (CancelRunRequest, CancelRunResponse, self._cancel, None),
            "RespondInteraction": (RespondInteractionRequest, RespondInteractionResponse,
                                   self._respond, None),
        }
        mapping = {
            _PREFIX + name: grpclib.const.Handler(
                self._unary(name, req, handle, guard), unary, req, resp)
            for name, (req, resp, handle, guard) in table.items()
        }
        mapping[_PREFIX + "WatchRun"] = grpclib.const.Handler(
            self._watch_rpc, grpclib.const.Cardinality.UNARY_STREAM,
            WatchRunRequest, WatchRunResponse,
        )
        return mapping
