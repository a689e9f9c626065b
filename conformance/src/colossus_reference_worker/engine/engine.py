"""The run engine: every RunService operation over the journal.

Handlers call the public coroutine methods with an authenticated
:class:`~colossus_reference_worker.credentials.Principal`; the engine owns
admission limits, live run drivers, watches and recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from grpclib.const import Status

from .._gen.colossus.api.v1alpha1 import CreateRunRequest, RespondInteractionRequest
from ..auth import require_scope
from ..config import WorkerConfig
from ..credentials import Principal, new_id
from ..errors import ApiError, JournalIntegrityError, exhausted, invalid, run_not_found, unavailable
from ..journal import Journal, Record
from .driver import RunDriver
from .frames import FrameCache
from .hub import ChangeHub
from .limits import CreateRateLimiter, Gate
from .listing import list_runs
from .model import TERMINAL, Event, State, initial_state, replay_check
from .pagination import TokenCodec
from .recovery import mark_clean_stop, recover
from .runs import EventLimitReached, FullRun, RunStore, RunTail, now_us
from .validation import OPAQUE_ID, ArtifactLookup, validate_create
from .watch_encoding import encode_watch_response

log = logging.getLogger(__name__)

# Encoded watch frames kept for replays (a bound of the worker's own, advertised nowhere).
FRAME_CACHE_BYTES = 8 * 1024 * 1024

_INTERACTION_SEQUENCE = re.compile(r"[1-9][0-9]{0,8}")


class RunEngine:
    def __init__(
        self,
        journal: Journal,
        config: WorkerConfig,
        token_key: bytes,
        capabilities: list[str],
        lookup_artifact: ArtifactLookup | None = None,
    ) -> None:
        self.config = config
        self.limits = config.limits
        self.capabilities = capabilities
        self.store = RunStore(journal, self.limits.max_events_per_run,
                              self.limits.reserved_lifecycle_events)
        self.lookup_artifact = lookup_artifact
        lim = self.limits
        self.rate = CreateRateLimiter(
            lim.create_rate_per_second, lim.create_rate_burst,
            lim.create_rate_per_application_per_second, lim.create_rate_per_application_burst,
        )
        self.watches = Gate(lim.max_watches, lim.max_watches_per_application, "WATCH_LIMIT",
                            "max_watches", "max_watches_per_application", "open watches")
        self.lists = Gate(lim.max_concurrent_list_runs, lim.max_concurrent_list_runs_per_application,
                          "LIST_CONCURRENCY_LIMIT", "max_concurrent_list_runs",
                          "max_concurrent_list_runs_per_application", "concurrent ListRuns calls")
        self.tokens = TokenCodec(token_key)
        self.hub = ChangeHub()
        self.frames = FrameCache(FRAME_CACHE_BYTES)
        self.active: dict[str, set[str]] = defaultdict(set)
        self.drivers: dict[str, RunDriver] = {}
        self.closing = False
        self.watch_calls = 0

    # --- journal plumbing used by drivers ---------------------------------------------------

    def state_of(self, run_id: str) -> State:
        tail = self.store.tail(run_id)
        assert tail is not None
        return tail.state

    def append(self, run_id: str, event: Event, *, pc: int | None = None,
               private: dict[str, Any] | None = None) -> dict[str, Any]:
        payload, state = self.store.append(run_id, event, pc=pc, private=private)
        if state["status"] in TERMINAL:
            for runs in self.active.values():
                runs.discard(run_id)
            if log.isEnabledFor(logging.INFO):
                self._log_finished(run_id, state)
        self.hub.notify(run_id)
        return payload

    def _log_finished(self, run_id: str, state: State) -> None:
        tail = self.store.tail(run_id)
        assert tail is not None
        app, created = tail.creation["application_id"], tail.creation["create_time"]
        seconds = round((state["update_time"] - created) / 1e6, 3)
        log.info("run %s of %s finished %s: %d events in %.3fs", run_id, app, state["status"],
                 state["last_sequence"], seconds, extra={"fields": {
                     "event": "run_finished", "run_id": run_id, "application_id": app,
                     "status": state["status"], "events": state["last_sequence"],
                     "duration_seconds": seconds}})

    def terminate(self, run_id: str, status: str, result: dict[str, Any]) -> None:
        self.append(run_id, {"type": "terminated", "status": status, "result": result})

    def driver_done(self, driver: RunDriver) -> None:
        if self.drivers.get(driver.run_id) is driver:
            del self.drivers[driver.run_id]

    def _start_driver(self, creation: dict[str, Any], pc: int, output: str = "") -> None:
        driver = RunDriver(self, creation, output)
        self.drivers[creation["run_id"]] = driver
        driver.start(pc)

    # --- lookups ---------------------------------------------------------------------------------

    def _owned_tail(self, principal: Principal, run_id: str) -> RunTail:
        if not OPAQUE_ID.fullmatch(run_id):
            raise run_not_found()
        tail = self.store.tail(run_id)
        if tail is None or tail.creation["application_id"] != principal.application_id:
            raise run_not_found()
        return tail

    def _owned_full(self, principal: Principal, run_id: str) -> FullRun:
        self._owned_tail(principal, run_id)
        full = self.store.full(run_id, with_events=False)
        assert full is not None
        return full

    # --- CreateRun ----------------------------------------------------------------------------------

    def create_run(self, principal: Principal, req: CreateRunRequest
                   ) -> tuple[dict[str, Any], State, bool]:
        if self.closing:
            raise unavailable()
        valid = validate_create(req, principal, self.limits, self.capabilities,
                                self.lookup_artifact)
        app = principal.application_id
        fields = valid.fields
        claim = self.store.claim(app, fields["idempotency_key"])
        if claim is not None:
            if not hmac.compare_digest(claim["fingerprint"], valid.fingerprint):
                raise ApiError(
                    Status.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT",
                    "the idempotency key was used for a different request",
                    {"field": "idempotency_key"},
                )
            full = self.store.full(claim["run_id"], with_events=False)
            assert full is not None
            return full.creation, full.state, True

        plan, plan_update = self._plan_for(principal, fields)

        lim = self.limits
        if len(self.active[app]) >= lim.max_active_runs_per_application:
            raise exhausted("ACTIVE_RUN_LIMIT", "too many active runs for this application",
                            "max_active_runs_per_application")
        if sum(len(r) for r in self.active.values()) >= lim.max_active_runs:
            raise exhausted("ACTIVE_RUN_LIMIT", "too many active runs", "max_active_runs")
        self.rate.check(app)

        create_time = now_us()
        run_id = new_id("run_")
        creation = {
            **fields,
            "run_id": run_id,
            "application_id": app,
            "session_id": fields["session_id"] or new_id("ses_"),
            "end_user_id": fields["end_user_id"],
            "plan": plan,
            "authority": {"credential_id": principal.credential_id,
                          **principal.grant.to_json()},
            "create_time": create_time,
            "fingerprint": valid.fingerprint,
            "state": initial_state(create_time),
        }
        if plan_update is not None:
            plan_update["run_id"] = run_id
        self.store.create(creation, plan_update)
        self.rate.take(app)
        self.active[app].add(run_id)
        self._start_driver(creation, 0)
        log.info("run %s created for %s", run_id, app, extra={"fields": {
            "event": "run_created", "run_id": run_id, "application_id": app}})
        return creation, creation["state"], False

    def _plan_for(self, principal: Principal, fields: dict[str, Any]
                  ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The plan identity a run will report, and the plan record its acceptance adds."""
        action = fields["plan_action"]
        if action is None:
            if fields["mode"] == "PLAN":
                plan_id = new_id("plan_")
                return ({"plan_id": plan_id, "revision": 1},
                        {"plan_id": plan_id, "revision": 1, "status": "DRAFT"})
            return None, None
        source = self._owned_full(principal, action["source_run_id"])
        source_plan = (source.state["result"] or {}).get("plan")
        current = self.store.plan_state(source_plan["plan_id"]) if source_plan else None
        if (
            source.creation["mode"] != "PLAN"
            or current is None
            or current["status"] != "DRAFT"
            or current["revision"] != action["revision"]
        ):
            raise ApiError(
                Status.FAILED_PRECONDITION, "PLAN_REVISION_STALE",
                "the source run's plan is not a Draft at that revision",
                {"field": "plan_action.revision"},
            )
        plan_id = current["plan_id"]
        if action["kind"] == "REVISE":
            revision = current["revision"] + 1
            return ({"plan_id": plan_id, "revision": revision},
                    {"plan_id": plan_id, "revision": revision, "status": "DRAFT"})
        return None, {"plan_id": plan_id, "revision": current["revision"], "status": "EXECUTED"}

    # --- GetRun ---------------------------------------------------------------------------------------

    def get_run(self, principal: Principal, run_id: str) -> tuple[dict[str, Any], State]:
        if not OPAQUE_ID.fullmatch(run_id):
            raise run_not_found()
        # A run verified before and unchanged since (its checkpoint kept current by
        # the append path) is answered from memory: polling a run in production
        # costs its producer next to nothing.
        mark = self.store.trusted(run_id)
        if mark is not None:
            if mark.creation["application_id"] != principal.application_id:
                raise run_not_found()
            return mark.creation, mark.state
        full = self._owned_full(principal, run_id)
        return full.creation, full.state

    # --- ListRuns -------------------------------------------------------------------------------------

    async def list_runs(self, principal: Principal, statuses: list[int], page_size: int,
                        page_token: str) -> tuple[list[tuple[dict[str, Any], State]], str]:
        return await list_runs(self, principal, statuses, page_size, page_token)

    # --- WatchRun -----------------------------------------------------------------------------------

    def open_watch(self, principal: Principal, run_id: str, after_sequence: int) -> None:
        """Check visibility and the cursor, then take a watch slot; pair with :meth:`close_watch`.

        On a live run a cursor ahead of its last event waits for later events. On a
        finished run no such event can ever come: the call is refused naming the field,
        instead of closing as if the stream were complete.
        """
        if self.closing:
            raise unavailable()
        state = self._owned_tail(principal, run_id).state
        last = state["last_sequence"]
        if after_sequence > last and state["status"] in TERMINAL:
            raise invalid("after_sequence", f"after_sequence {after_sequence} is past the "
                                            f"finished run's last event ({last})")
        self.watches.acquire(principal.application_id)

    def close_watch(self, principal: Principal) -> None:
        self.watches.release(principal.application_id)

    async def watch(self, run_id: str, after: int) -> AsyncIterator[dict[str, Any]]:
        """Stored events after ``after``, then live ones, ending after the terminal event."""
        first = None
        state: State | None = None
        prev = None
        while True:
            wake = self.hub.current(run_id)
            for rec in self.store.events_after_iter(run_id, prev):
                prev = rec
                if rec.version == 1:
                    first = rec.payload
                    state = initial_state(first["create_time"])
                    continue
                payload = rec.payload
                assert state is not None
                state = replay_check(state, payload)
                if payload["seq"] > after:
                    yield payload
                if payload["event"]["type"] == "terminated":
                    self.hub.forget(run_id)
                    return
            if first is None:
                raise run_not_found()
            if self.closing:
                raise unavailable()
            await wake.wait()

    async def watch_frames(self, run_id: str, after: int) -> AsyncIterator[list[bytes]]:
        """Like :meth:`watch`, but encoded ``WatchRunResponse`` frames, in batches.

        Each wake verifies the run only beyond its checkpoint, then serves the new
        events' frames from the frame cache when it holds them anchored at the
        verified head, else reads, checks and encodes them (filling the cache).
        """
        sent = after
        while True:
            wake = self.hub.current(run_id)
            checked = self.store.checked(run_id)
            if checked is None:
                raise run_not_found()
            full, last = checked
            top = full.state["last_sequence"]
            if top > sent:
                yield self._frames(run_id, sent + 1, top, last)
                sent = top
            if full.state["status"] in TERMINAL:
                self.hub.forget(run_id)
                return
            if self.closing:
                raise unavailable()
            await wake.wait()

    def _frames(self, run_id: str, first: int, last: int, head: Record) -> list[bytes]:
        """Frames of events ``first..last``; ``head`` is the verified record of ``last``."""
        epoch = self.store.journal.trust_epoch()
        cached = self.frames.slice(run_id, first, last, head.hash, epoch)
        if cached is not None:
            return cached
        # Read on from the end of what is cached (keeping the cache contiguous), or
        # just the asked range when nothing is.
        have, have_hash = self.frames.extent(run_id, epoch)
        start = have + 1 if 0 < have < last else first
        prefix: list[bytes] = []
        if start > first:
            assert have_hash is not None
            prefix = self.frames.slice(run_id, first, have, have_hash, epoch) or []
        records = self.store.journal.range(f"run:{run_id}", start + 1, last + 1)
        if (len(records) != last - start + 1 or records[-1].hash != head.hash
                or (have and start == have + 1 and records[0].prev_hash != have_hash)):
            raise JournalIntegrityError(f"run:{run_id} changed while it was read")
        frames = [encode_watch_response(run_id, rec.payload) for rec in records]
        self.frames.extend(run_id, start, frames, [rec.hash for rec in records], epoch)
        return prefix + frames[max(0, first - start):]

    # --- CancelRun ----------------------------------------------------------------------------------

    def cancel_run(self, principal: Principal, run_id: str) -> tuple[dict[str, Any], State]:
        tail = self._owned_tail(principal, run_id)
        state = tail.state
        if state["status"] in TERMINAL or state["status"] == "CANCELLING":
            return tail.creation, state
        # Closing the interaction and entering CANCELLING commit together, so a crash
        # never leaves a waiting run whose question is already closed.
        with self.store.transaction():
            if state["pending"] is not None:
                self.append(run_id, {"type": "interaction_resolved",
                                     "interaction_id": state["pending"]["id"],
                                     "outcome": "CANCELLED"})
                state = self.state_of(run_id)
            self.append(run_id, {"type": "status", "previous": state["status"],
                                 "status": "CANCELLING"})
        driver = self.drivers.get(run_id)
        if driver is not None:
            driver.request_cancel()
        else:
            self.terminate(run_id, "CANCELLED", {"output_text": ""})
        return tail.creation, self.state_of(run_id)

    # --- RespondInteraction -----------------------------------------------------------------------

    def respond(self, principal: Principal, req: RespondInteractionRequest
                ) -> tuple[dict[str, Any], State]:
        scopes = principal.grant.scopes
        if "prompts:respond" not in scopes and "approvals:respond" not in scopes:
            require_scope(principal, "prompts:respond")
        tail = self._owned_tail(principal, req.run_id)
        state = tail.state
        interaction = self._find_interaction(req.run_id, req.interaction_id)
        require_scope(principal, "prompts:respond" if interaction["kind"] == "prompt"
                      else "approvals:respond")
        pending = state["pending"]
        if pending is None or pending["id"] != req.interaction_id:
            raise ApiError(Status.FAILED_PRECONDITION, "INTERACTION_ALREADY_RESOLVED",
                           "the interaction was already answered or closed")
        if interaction["kind"] == "prompt":
            if req.prompt is None:
                raise invalid("prompt", "this interaction is a prompt")
            if req.prompt.choice not in pending["choices"]:
                raise ApiError(Status.INVALID_ARGUMENT, "INTERACTION_ANSWER_MISMATCH",
                               "the answer is not one of the displayed choices",
                               {"field": "prompt.choice"})
            resolution: Event = {"type": "interaction_resolved", "interaction_id": pending["id"],
                                 "outcome": "ANSWERED", "choice": req.prompt.choice}
            answer: Any = req.prompt.choice
        else:
            if req.approval is None:
                raise invalid("approval", "this interaction is an approval")
            if not hmac.compare_digest(req.approval.binding.encode(),
                                       pending["binding"].encode()):
                raise ApiError(Status.INVALID_ARGUMENT, "INTERACTION_ANSWER_MISMATCH",
                               "the answer does not echo the approval's binding",
                               {"field": "approval.binding"})
            decision = int(req.approval.decision)
            if decision not in (1, 2):
                raise invalid("approval.decision", "the decision must be APPROVE or DENY")
            resolution = {"type": "interaction_resolved", "interaction_id": pending["id"],
                          "outcome": "APPROVED" if decision == 1 else "DENIED"}
            answer = decision == 1
        # The answer and the move back to RUNNING commit together: a crash between
        # them would leave a run "waiting" on an interaction that is already answered.
        # The RUNNING record also keeps the answer, so a run resumed after a crash
        # continues with it instead of asking again (W13).
        with self.store.transaction():
            self.append(req.run_id, resolution)
            # At the event cap the driver meets the limit too and ends the run.
            with contextlib.suppress(EventLimitReached):
                self.append(req.run_id, {"type": "status", "previous": "WAITING_FOR_INPUT",
                                         "status": "RUNNING"},
                            private={"answer": answer, "answer_pc": state["pc"]})
        driver = self.drivers.get(req.run_id)
        if driver is not None:
            driver.deliver(answer)
        return tail.creation, self.state_of(req.run_id)

    def _find_interaction(self, run_id: str, interaction_id: str) -> dict[str, Any]:
        not_found = ApiError(Status.NOT_FOUND, "INTERACTION_NOT_FOUND", "interaction not found",
                             {"field": "interaction_id"})
        if not OPAQUE_ID.fullmatch(interaction_id):
            raise invalid("interaction_id", "interaction_id must be 1-64 characters of "
                          "[A-Za-z0-9_-]")
        if not interaction_id.startswith("ix_"):
            raise not_found
        # The worker's own IDs are ix_<event sequence>, which fits in the event budget.
        if not _INTERACTION_SEQUENCE.fullmatch(interaction_id[3:]):
            raise invalid("interaction_id", "interaction_id is not an interaction ID of this run")
        seq = int(interaction_id[3:])
        rec = self.store.event_record(run_id, seq)
        if rec is None:
            raise not_found
        event = rec["event"]
        if event["type"] != "interaction_requested" or event["interaction"]["id"] != interaction_id:
            raise not_found
        interaction: dict[str, Any] = event["interaction"]
        return interaction

    # --- start-up recovery (W13) and shutdown ---------------------------------------------------

    def recover(self) -> dict[str, int]:
        """Settle or resume every run a previous process left non-terminal."""
        return recover(self)

    async def shutdown(self) -> None:
        self.closing = True
        self.hub.notify_all()
        tasks = [d.task for d in self.drivers.values() if d.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        # Every driver has stopped appending: tell the next start this stop was graceful.
        mark_clean_stop(self)


