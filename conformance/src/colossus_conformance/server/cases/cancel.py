"""Cancel (W10): idempotent, through CANCELLING to CANCELLED, nothing after the end."""

from __future__ import annotations

from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs
from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, script
from ..wire import Api


async def _cancel(api: Api, run_id: str) -> runs.Run:
    reply = await api.unary("RunService/CancelRun", rs.CancelRunRequest(run_id=run_id), rs.CancelRunResponse)
    return reply.run


@case("cancel.through-cancelling", ["W10", "W8"], "a cancelled run goes RUNNING -> CANCELLING -> CANCELLED")
async def through_cancelling(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("say start", "sleep forever"))).run.run_id
    await ctx.watch(api, run_id, limit=2)
    reply = await _cancel(api, run_id)
    expect(
        reply.status in (runs.RUN_STATUS_CANCELLING, runs.RUN_STATUS_CANCELLED),
        f"CancelRun said {reply.status}",
    )
    watched = await ctx.watch(api, run_id)
    statuses = [
        e.status_changed.status for e in watched.events if e.WhichOneof("payload") == "status_changed"
    ]
    expect(runs.RUN_STATUS_CANCELLING in statuses, f"no CANCELLING status change in {statuses}")
    expect_equal(watched.events[-1].WhichOneof("payload"), "terminated", "the last event")
    expect_equal(watched.events[-1].terminated.status, runs.RUN_STATUS_CANCELLED, "terminal status")
    expect_equal((await ctx.get(api, run_id)).status, runs.RUN_STATUS_CANCELLED, "GetRun status")


@case("cancel.idempotent", ["W10"], "cancelling twice, and cancelling a finished run, change nothing more")
async def idempotent(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("sleep forever"))).run.run_id
    await _cancel(api, run_id)
    await _cancel(api, run_id)
    final = await ctx.settle(api, run_id)
    expect_equal(final.status, runs.RUN_STATUS_CANCELLED, "status after two cancels")
    again = await _cancel(api, run_id)
    expect_equal(again.status, runs.RUN_STATUS_CANCELLED, "status a third cancel reports")
    watched = await ctx.watch(api, run_id)
    expect_equal(watched.terminal_count, 1, "terminal events after three cancels")
    done = (await ctx.create(api, script("say quick"))).run.run_id
    await ctx.settle(api, done)
    expect_equal((await _cancel(api, done)).status, runs.RUN_STATUS_SUCCEEDED, "cancelling a SUCCEEDED run")


@case(
    "cancel.closes-the-pending-question",
    ["W10"],
    "cancelling a waiting run resolves its interaction as CANCELLED",
)
async def closes_question(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("ask Continue? | yes"))).run.run_id
    await ctx.wait_status(api, run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)
    await _cancel(api, run_id)
    watched = await ctx.watch(api, run_id)
    resolved = [
        e.interaction_resolved for e in watched.events if e.WhichOneof("payload") == "interaction_resolved"
    ]
    expect_equal([r.outcome for r in resolved], [runs.INTERACTION_OUTCOME_CANCELLED], "interaction outcomes")
    expect_equal(watched.events[-1].terminated.status, runs.RUN_STATUS_CANCELLED, "terminal status")
