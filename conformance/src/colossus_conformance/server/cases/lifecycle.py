"""Run lifecycle through `colossus-script v1` (W8, W14): every state reachable on demand."""

from __future__ import annotations

import itertools

from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, refused, script
from ._common import expect_error


@case(
    "lifecycle.succeeds-with-output",
    ["W8", "W14"],
    "a `say` script succeeds: output deltas, a SUCCEEDED terminal event, GetRun agrees",
)
async def succeeds(ctx: CaseContext) -> None:
    api = ctx.api()
    run = (await ctx.create(api, script("say hello", "say world"))).run
    expect(
        run.run_id
        and run.status in (runs.RUN_STATUS_QUEUED, runs.RUN_STATUS_RUNNING, runs.RUN_STATUS_SUCCEEDED),
        f"CreateRun returned status {run.status}",
    )
    watched = await ctx.watch(api, run.run_id)
    expect(watched.error is None and not watched.timed_out, f"the watch ended with {watched.error}")
    text = "".join(e.output_delta.text for e in watched.events if e.WhichOneof("payload") == "output_delta")
    expect_equal(text, "helloworld", "output deltas")
    last = watched.events[-1]
    expect_equal(last.WhichOneof("payload"), "terminated", "last event")
    expect_equal(last.terminated.status, runs.RUN_STATUS_SUCCEEDED, "terminal status")
    final = await ctx.get(api, run.run_id)
    expect_equal(final.status, runs.RUN_STATUS_SUCCEEDED, "GetRun status")
    expect_equal(final.last_sequence, last.sequence, "GetRun last_sequence")
    expect_equal(final.result.output_text, "helloworld", "GetRun output_text")
    expect(all(e.run_id == run.run_id for e in watched.events), "an event names another run")


@case("lifecycle.fail-step", ["W14"], "`fail CODE MESSAGE` ends the run FAILED with that RunFailure")
async def fail_step(ctx: CaseContext) -> None:
    api = ctx.api()
    run = await ctx.settle(
        api, (await ctx.create(api, script("say before", "fail disk_full no space"))).run.run_id
    )
    expect_equal(run.status, runs.RUN_STATUS_FAILED, "status")
    expect_equal((run.result.failure.code, run.result.failure.message), ("disk_full", "no space"), "failure")


@case("lifecycle.tool-activity", ["W14"], "`tool NAME` reports STARTED then COMPLETED with its action class")
async def tool_activity(ctx: CaseContext) -> None:
    api = ctx.api()
    run = (await ctx.create(api, script("tool filesystem.read"))).run
    watched = await ctx.watch(api, run.run_id)
    tools = [e.tool_activity for e in watched.events if e.WhichOneof("payload") == "tool_activity"]
    expect_equal(
        [t.phase for t in tools],
        [runs.TOOL_ACTIVITY_PHASE_STARTED, runs.TOOL_ACTIVITY_PHASE_COMPLETED],
        "tool activity phases",
    )
    expect(all(t.action_class == runs.ACTION_CLASS_READ for t in tools), "filesystem.read is not READ")
    expect(len({t.activity_id for t in tools}) == 1, "STARTED and COMPLETED name different activities")


@case("lifecycle.bad-script-refused", ["W7", "W14"], "a script with an unknown step is refused at CreateRun")
async def bad_script(ctx: CaseContext) -> None:
    error = expect_error(
        await refused(ctx.create(ctx.api(), script("say fine", "dance"))),
        "INVALID_ARGUMENT",
        "FIELD_INVALID",
        "CreateRun with a bad script",
    )
    expect_equal(error.metadata.get("field"), "input[0].text", "ErrorInfo field")


@case("lifecycle.status-changes-chain", ["W8"], "each StatusChanged names the status the previous one set")
async def status_chain(ctx: CaseContext) -> None:
    api = ctx.api()
    run = (await ctx.create(api, script("say a", "tool filesystem.read", "say b"))).run
    watched = await ctx.watch(api, run.run_id)
    changes = [e.status_changed for e in watched.events if e.WhichOneof("payload") == "status_changed"]
    expect(changes, "no StatusChanged event")
    for before, after in itertools.pairwise(changes):
        expect_equal(after.previous_status, before.status, "previous_status of a StatusChanged")
