"""What a server case gets: connections as each application, and the few calls every case needs.

The helpers only send and collect; judging stays in the case. ``create`` is the one place
that waits out a create-rate refusal (for the delay the worker's RetryInfo names), so cases
sharing a worker with its own default limits still run; the rate-limit case calls the RPC
itself.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs
from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs
from colossus_agent_client.api.v1alpha1 import system_pb2 as system

from .daemon import DaemonWorker
from .wire import Api, RawBytes, RpcError

SCRIPT_HEADER = "colossus-script v1"
TERMINAL = frozenset(
    {
        runs.RUN_STATUS_SUCCEEDED,
        runs.RUN_STATUS_FAILED,
        runs.RUN_STATUS_CANCELLED,
        runs.RUN_STATUS_INTERRUPTED,
        runs.RUN_STATUS_OUTCOME_UNKNOWN,
    }
)
RATE_RETRIES = 20
# Refusals a busy worker gives any client, waited out until the case's own deadline.
TRANSIENT = frozenset({"CREATE_RATE_LIMIT", "ACTIVE_RUN_LIMIT"})


def script(*lines: str) -> str:
    """A ``colossus-script v1`` run script (W14)."""
    return "\n".join([SCRIPT_HEADER, *lines])


@dataclass
class Watched:
    """Everything one watch delivered, and how it ended."""

    events: list[runs.RunEvent] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    error: RpcError | None = None
    timed_out: bool = False

    @property
    def sequences(self) -> list[int]:
        return [e.sequence for e in self.events]

    @property
    def terminal_count(self) -> int:
        return sum(1 for e in self.events if e.WhichOneof("payload") == "terminated")


class CaseContext:
    """One case's view of the worker it runs on."""

    def __init__(self, worker: DaemonWorker, h2spec: str | None = None):
        self.worker = worker
        self.h2spec = h2spec
        self._apis: list[Api] = []

    # -- connections -----------------------------------------------------------

    def api(self, application: str = "alpha") -> Api:
        """A new connection that authenticates as ``application``."""
        return self._track(Api(*self.worker.address, self.worker.enrolments[application].bearer))

    def api_with(self, bearer: str | None) -> Api:
        """A new connection sending exactly this bearer (None: no authorization header)."""
        return self._track(Api(*self.worker.address, bearer))

    def _track(self, api: Api) -> Api:
        self._apis.append(api)
        return api

    def close(self) -> None:
        for api in self._apis:
            api.close()
        self._apis.clear()

    # -- the worker's lifetime (cases marked ``alone`` only) -------------------

    async def stop_worker(self) -> int | None:
        """Graceful stop through the manifest; connections of this case are closed first."""
        self.close()
        return await asyncio.to_thread(self.worker.stop)

    async def kill_worker(self) -> None:
        self.close()
        await asyncio.to_thread(self.worker.kill)

    async def start_worker(self) -> None:
        await asyncio.to_thread(self.worker.start)

    # -- calls -----------------------------------------------------------------

    @staticmethod
    def key() -> str:
        return "srv-" + secrets.token_hex(8)

    @staticmethod
    def request(text: str, key: str | None = None, **fields: Any) -> rs.CreateRunRequest:
        return rs.CreateRunRequest(
            idempotency_key=key or CaseContext.key(),
            input=[runs.InputPart(text=text)],
            mode=runs.RUN_MODE_EXECUTE,
            **fields,
        )

    async def create(
        self, api: Api, text: str, key: str | None = None, **fields: Any
    ) -> rs.CreateRunResponse:
        return await self.create_request(api, self.request(text, key, **fields))

    async def create_request(self, api: Api, request: rs.CreateRunRequest) -> rs.CreateRunResponse:
        """CreateRun, waiting out create-rate and active-run refusals (for the delay the
        worker's RetryInfo names) until the call succeeds or fails otherwise; the case's
        deadline bounds the wait. A worker started with its own low limits then still
        serves every case, only more slowly."""
        while True:
            try:
                return await api.unary("RunService/CreateRun", request, rs.CreateRunResponse)
            except RpcError as exc:
                if exc.reason not in TRANSIENT:
                    raise
                await asyncio.sleep(min(max(exc.retry_delay or 0.2, 0.05), 2.0))

    async def get(self, api: Api, run_id: str) -> runs.Run:
        reply = await api.unary("RunService/GetRun", rs.GetRunRequest(run_id=run_id), rs.GetRunResponse)
        return reply.run

    async def info(self, api: Api) -> system.ServerInfo:
        reply = await api.unary(
            "SystemService/GetServerInfo", system.GetServerInfoRequest(), system.GetServerInfoResponse
        )
        return reply.server_info

    async def list_page(
        self, api: Api, statuses: Sequence[int] = (), token: str = "", page_size: int = 0
    ) -> rs.ListRunsResponse:
        """One page; waits out LIST_CONCURRENCY_LIMIT (W11 allows one listing per application at a
        time, and cases sharing an application may list at once)."""
        request = rs.ListRunsRequest(statuses=list(statuses), page_token=token, page_size=page_size)
        for _ in range(RATE_RETRIES):
            try:
                return await api.unary("RunService/ListRuns", request, rs.ListRunsResponse)
            except RpcError as exc:
                if exc.reason != "LIST_CONCURRENCY_LIMIT":
                    raise
                await asyncio.sleep(0.05)
        raise RpcError(code="RESOURCE_EXHAUSTED", reason="LIST_CONCURRENCY_LIMIT", message="still limited")

    async def list_all(self, api: Api, statuses: Sequence[int] = ()) -> list[str]:
        """Every run ID of the listing, following tokens through short and empty pages."""
        ids: list[str] = []
        token = ""
        for _ in range(500):
            page = await self.list_page(api, statuses, token)
            ids += [r.run_id for r in page.runs]
            token = page.next_page_token
            if not token:
                return ids
        raise RpcError(code="NO_END", message="the listing never ended")

    async def watch(
        self, api: Api, run_id: str, after: int = 0, limit: int | None = None, seconds: float = 15.0
    ) -> Watched:
        """Watches until the stream ends, ``limit`` events arrived, or ``seconds`` passed."""
        watched = Watched()

        async def collect() -> None:
            request = RawBytes(rs.WatchRunRequest(run_id=run_id, after_sequence=after).SerializeToString())
            try:
                async for message in api.server_stream(
                    "RunService/WatchRun", request, RawBytes, timeout=seconds
                ):
                    watched.raw.append(message.data)
                    watched.events.append(rs.WatchRunResponse.FromString(message.data).event)
                    if limit is not None and len(watched.events) >= limit:
                        return
            except RpcError as exc:
                watched.error = exc

        try:
            await asyncio.wait_for(collect(), seconds + 1.0)
        except asyncio.TimeoutError:
            watched.timed_out = True
        if watched.error is not None and watched.error.code == "DEADLINE_EXCEEDED":
            watched.timed_out = True
        return watched

    async def settle(self, api: Api, run_id: str, seconds: float = 15.0) -> runs.Run:
        """Waits (by watching) until the run is terminal; returns its final state."""
        await self.watch(api, run_id, seconds=seconds)
        return await self.get(api, run_id)

    async def wait_status(self, api: Api, run_id: str, status: int, seconds: float = 10.0) -> runs.Run:
        """Polls GetRun until the run reaches ``status`` (or the time is up)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        run = await self.get(api, run_id)
        while run.status != status and loop.time() < deadline:
            await asyncio.sleep(0.05)
            run = await self.get(api, run_id)
        return run


async def refused(call: Any) -> RpcError | None:
    """Awaits ``call``; returns the RpcError it raised, or None when it succeeded."""
    try:
        await call
    except RpcError as exc:
        return exc
    return None
