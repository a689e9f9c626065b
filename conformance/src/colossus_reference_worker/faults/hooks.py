"""``FaultHooks``: the worker's deliberate misbehaviour, armed per case (W15).

The server plumbing calls these hooks around the listener, every request, the
unary handlers and the watch stream (see :mod:`colossus_reference_worker.worker_hooks`).
The handlers themselves are untouched: a fault is either an error raised
before or after a handler, or a rewrite of the event iterator a watch sends.

The armed plan and the observation log are shared with the control channel,
which runs on its own thread; :class:`FaultState` guards them with a lock.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from grpclib.const import Status

from ..fault_flags import ListenerVariant
from ..worker_hooks import WatchContext, WorkerHooks
from .listener import build_listener_context
from .observations import ObservationLog
from .plan import FaultPlan, RpcFault, Shutdown, WatchFault
from .replies import ReplyFault, alter_upload, other_run, repeat_page, rewrite_download

if TYPE_CHECKING:
    import ssl

    from .._gen.colossus.api.v1alpha1 import RunEvent, ServerInfo

# What a fault failure says; clients must branch on code and reason only.
_FAULT_MESSAGE = "injected failure"

# Reasons used when a case names a code but no reason.
_DEFAULT_REASON = {
    Status.UNAVAILABLE: "UNAVAILABLE",
    Status.INTERNAL: "INTERNAL",
    Status.DATA_LOSS: "JOURNAL_INTEGRITY",
}


def _api_error(code: Status, reason: str | None) -> Exception:
    from ..errors import ApiError

    return ApiError(code, reason or _DEFAULT_REASON.get(code, "INTERNAL"), _FAULT_MESSAGE)


class FaultState:
    """The armed case: its plan, its watch numbering and its observations."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.case: str | None = None
        self.plan = FaultPlan()
        self.observations = ObservationLog()
        # Worker-wide WatchRun call index -> 1-based number within the case.
        self._watch_numbers: dict[int, int] = {}
        self._generation = 0
        self._list_calls = 0  # ListRuns calls of the case, for list_runs_repeat
        # Connections to drop silently that were armed on the command line, before any
        # case could be (``--fault-silent-close``): they outlive a ``begin`` that keeps
        # observations (the re-arming after a restart) and end with the case.
        self.startup_silent_closes = 0

    def begin(self, case: str, plan: FaultPlan, keep_observations: bool = False) -> None:
        """Arms ``case``. ``keep_observations`` keeps what was recorded since the last
        reset (for a worker restarted in the middle of a case, whose client may reconnect
        before the case is armed again) and the numbering of watches already seen."""
        with self.lock:
            self.case = case
            self.plan = plan
            self._generation += 1
            self._list_calls = 0
            if not keep_observations:
                self._watch_numbers = {}
                self.observations.reset()
                self.startup_silent_closes = 0

    def end(self) -> None:
        with self.lock:
            self.case = None
            self.plan = FaultPlan()
            self.startup_silent_closes = 0
            self._watch_numbers = {}
            self._generation += 1

    def watch_number(self, ctx: WatchContext) -> tuple[int, list[WatchFault]]:
        """Number a watch within the case (stable for one call) and its faults."""
        with self.lock:
            n = self._watch_numbers.get(ctx.call_index)
            if n is None:
                n = len(self._watch_numbers) + 1
                self._watch_numbers[ctx.call_index] = n
                self.observations.watch(ctx.after_sequence)
            return n, self.plan.watch_faults(n)

    def take_reply_fault(self, kind: str) -> ReplyFault | None:
        """Consume one use of the first armed reply fault of ``kind``.

        ``list_runs_repeat`` counts the case's ListRuns calls and applies from ``from_call``.
        """
        with self.lock:
            if kind == "list_runs_repeat":
                self._list_calls += 1
            for fault in self.plan.replies:
                if fault.kind != kind or fault.remaining <= 0:
                    continue
                if kind == "list_runs_repeat" and self._list_calls < fault.from_call:
                    return None
                fault.remaining -= 1
                return fault
            return None

    def take_silent_close(self) -> bool:
        """Consume one armed ``silent_close`` (start-up ones first); True when this
        connection must be dropped."""
        with self.lock:
            if self.startup_silent_closes > 0:
                self.startup_silent_closes -= 1
            elif self.plan.silent_closes > 0:
                self.plan.silent_closes -= 1
            else:
                return False
            self.observations.silent_close()
            return True

    def take_shutdown(self, method: str) -> Shutdown | None:
        """Consume the armed ``shutdown`` fault if ``method`` is the call it waits for."""
        with self.lock:
            fault = self.plan.shutdown
            if fault is None or fault.method != method:
                return None
            self.plan.shutdown = None
            self.observations.shutdown()
            return fault

    def take_rpc_fault(self, method: str, *, after_commit: bool) -> RpcFault | None:
        """Consume one use of the first matching ``rpc_fail``, if any is left."""
        with self.lock:
            for fault in self.plan.rpc:
                if (fault.method == method and fault.after_commit == after_commit
                        and fault.remaining > 0):
                    fault.remaining -= 1
                    return fault
            return None


def _altered(event: RunEvent) -> RunEvent:
    """A copy of ``event`` with the same run and sequence but other content."""
    twin = copy.deepcopy(event)
    if twin.output_delta is not None:
        twin.output_delta.text += " [altered]"
    when = twin.event_time or datetime.datetime.now(datetime.timezone.utc)
    twin.event_time = when + datetime.timedelta(seconds=1)
    return twin


def _renumbered(event: RunEvent, sequence: int) -> RunEvent:
    """A copy of ``event`` under another sequence number (new content, not a replay)."""
    twin = _altered(event)
    twin.sequence = sequence
    return twin


def _of_other_run(event: RunEvent) -> RunEvent:
    """The next event in sequence, but carrying a different (well-formed) run ID."""
    twin = _renumbered(event, event.sequence + 1)
    last = twin.run_id[-1:]
    twin.run_id = twin.run_id[:-1] + ("1" if last != "1" else "2")
    return twin


class FaultHooks(WorkerHooks):
    """Applies the armed case's faults and records what the worker sees."""

    def __init__(
        self,
        state: FaultState | None = None,
        listener: ListenerVariant | None = None,
    ) -> None:
        self.state = state or FaultState()
        self.listener = listener
        # Set by the serving loop: begins the worker's graceful stop in this process
        # (``shutdown`` fault); takes the seconds until it starts again, or None.
        self.begin_shutdown: Callable[[float | None], None] | None = None
        # Added to the listener's connection IDs and the watch call indexes, which start
        # at 1 in every lifetime: after an in-place restart they stay unique in the record.
        self._id_base = 0

    def new_lifetime(self) -> None:
        """The worker restarts inside this process (the fault channel's ``restart`` op)."""
        self._id_base += 1 << 32
        self.state.observations.forget_handshakes_in_progress()

    def _watch_ctx(self, ctx: WatchContext) -> WatchContext:
        if not self._id_base:
            return ctx
        return dataclasses.replace(ctx, call_index=ctx.call_index + self._id_base)

    # -- listener --------------------------------------------------------

    def ssl_context_for_listener(self, default: ssl.SSLContext, **material: Any) -> ssl.SSLContext:
        if self.listener is None:
            return default
        return build_listener_context(
            self.listener,
            certificate_pem=material["certificate_pem"],
            private_key_pem=material["private_key_pem"],
            host=material["host"],
        )

    def serve_without_h2(self) -> bool:
        return self.listener is ListenerVariant.NO_H2_ALPN

    # -- observation ------------------------------------------------------

    def on_accept(self, conn_id: int) -> None:
        self.state.observations.accepted(conn_id + self._id_base)

    def on_connection(self, conn_id: int, tls_version: str | None, handshake_ok: bool) -> None:
        self.state.observations.connection(conn_id + self._id_base, tls_version, handshake_ok)

    def on_disconnect(self, conn_id: int) -> None:
        self.state.observations.disconnected(conn_id + self._id_base)

    def drop_connection(self) -> bool:
        return self.state.take_silent_close()

    def on_rpc(self, conn_id: int, method: str, bearer_presented: bool) -> None:
        # conn_id 0 means unknown and stays 0.
        known = conn_id + self._id_base if conn_id else 0
        self.state.observations.rpc(known, method, bearer_presented)

    def alter_reply(self, method: str, request: Any, reply: Any) -> Any:
        if method == "ArtifactService/UploadArtifact":
            fault = self.state.take_reply_fault("upload_reply")
            return alter_upload(fault, reply) if fault is not None else reply
        if method == "RunService/ListRuns":
            fault = self.state.take_reply_fault("list_runs_repeat")
            return repeat_page(request, reply) if fault is not None else reply
        if method == "RunService/GetRun":
            fault = self.state.take_reply_fault("get_run_other_run")
            return other_run(reply) if fault is not None else reply
        return reply

    def wrap_replies(self, method: str, replies: AsyncIterator[Any]) -> AsyncIterator[Any]:
        if method != "ArtifactService/DownloadArtifact":
            return replies
        fault = self.state.take_reply_fault("download")
        return rewrite_download(fault, replies, _api_error) if fault is not None else replies

    def on_watch(self, ctx: WatchContext) -> None:
        self.state.watch_number(self._watch_ctx(ctx))

    # -- unary faults -------------------------------------------------------

    def server_info(self, info: ServerInfo) -> ServerInfo:
        with self.state.lock:
            override = self.state.plan.server_info
        if override is None:
            return info
        info = copy.deepcopy(info)
        for name in ("instance_id", "api_package", "api_major", "deployment_mode"):
            value = getattr(override, name)
            if value is not None:
                setattr(info, name, value)
        if override.capabilities is not None:
            info.capabilities = list(override.capabilities)
        if override.limits and info.limits is not None:
            for name, value in override.limits:
                setattr(info.limits, name, value)
        return info

    async def before_unary(self, method: str) -> None:
        if self.begin_shutdown is not None and (stop := self.state.take_shutdown(method)):
            # The worker begins its stop with this call in flight; the stop ends the call.
            self.begin_shutdown(stop.down_seconds)
            await asyncio.Event().wait()
        fault = self.state.take_rpc_fault(method, after_commit=False)
        if fault is not None:
            raise _api_error(fault.code, fault.reason)

    async def after_unary_commit(self, method: str) -> None:
        fault = self.state.take_rpc_fault(method, after_commit=True)
        if fault is not None:
            raise _api_error(fault.code, fault.reason)

    # -- watch faults ---------------------------------------------------------

    def wrap_watch(
        self, ctx: WatchContext, events: AsyncIterator[RunEvent]
    ) -> AsyncIterator[RunEvent]:
        _, faults = self.state.watch_number(self._watch_ctx(ctx))
        refused = self.state.take_rpc_fault("RunService/WatchRun", after_commit=False)
        if not faults and refused is None:
            return events
        return self._faulty_watch(faults, refused, events, ctx.after_sequence)

    async def _faulty_watch(
        self,
        faults: list[WatchFault],
        refused: RpcFault | None,
        events: AsyncIterator[RunEvent],
        cursor: int,
    ) -> AsyncIterator[RunEvent]:
        if refused is not None:
            raise _api_error(refused.code, refused.reason)
        skipped = {f.sequence for f in faults if f.kind == "skip"}
        # An event numbered at the caller's cursor, sent before the first real one.
        resend = cursor >= 1 and any(f.kind == "resend_before_cursor" for f in faults)
        triggers = [f for f in faults if f.kind not in ("skip", "resend_before_cursor", "after_terminal")]
        after_terminal = any(f.kind == "after_terminal" for f in faults)
        keep = max((f.count for f in triggers if f.kind == "replay"), default=0)
        sent: deque[RunEvent] = deque(maxlen=max(keep, 1))

        # after_sequence 0 means "before the first event".
        for fault in (f for f in triggers if f.after_sequence == 0):
            if await self._trigger(fault, sent) == "stop":
                return

        try:
            async for event in events:
                if event.sequence in skipped:
                    continue
                if resend:
                    resend = False
                    early = copy.deepcopy(event)
                    early.sequence = cursor
                    yield early
                yield event
                sent.append(event)
                for fault in (f for f in triggers if f.after_sequence == event.sequence):
                    if fault.kind == "replay":
                        for again in list(sent)[-fault.count:]:
                            yield again
                    elif fault.kind == "replay_altered":
                        yield _altered(event)
                    elif fault.kind == "other_run":
                        yield _of_other_run(event)
                    elif await self._trigger(fault, sent) == "stop":
                        return
            if after_terminal and sent:
                # The stream ended after the run's terminal event; one more follows.
                yield _renumbered(sent[-1], sent[-1].sequence + 1)
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    @staticmethod
    async def _trigger(fault: WatchFault, sent: deque[RunEvent]) -> str | None:
        if fault.kind == "stall":
            await asyncio.sleep(fault.seconds)
            return None
        if fault.kind == "clean_close":
            return "stop"
        if fault.kind == "fail":
            raise _api_error(fault.code, fault.reason)
        return None
