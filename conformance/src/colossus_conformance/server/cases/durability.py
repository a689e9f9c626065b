"""Durability (W1, W2, W5, W6, W13): what a graceful restart and a kill keep, and how runs settle."""

from __future__ import annotations

import asyncio

from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, script
from ..tls_probe import handshake

FINISHED = script("say kept", "tool filesystem.read", "say intact")


async def _finished_run(ctx: CaseContext, key: str) -> tuple[str, list[bytes]]:
    api = ctx.api("durable")
    run_id = (await ctx.create(api, FINISHED, key=key)).run.run_id
    watched = await ctx.watch(api, run_id)
    expect(watched.terminal_count == 1, f"the run did not finish before the stop ({watched.error})")
    return run_id, watched.raw


async def _kept(ctx: CaseContext, run_id: str, raw: list[bytes], key: str) -> None:
    api = ctx.api("durable")
    again = await ctx.watch(api, run_id)
    expect(again.raw == raw, "the finished run's events differ after the restart")
    replay = await ctx.create(api, FINISHED, key=key)
    expect(replay.replayed and replay.run.run_id == run_id, "the idempotency key was forgotten")
    expect(run_id in await ctx.list_all(api), "the run is missing from ListRuns")


@case(
    "durability.graceful-restart",
    ["W1", "W2", "W5", "W6"],
    "after a graceful stop the discovery files are gone; after the start identity, runs and keys are kept",
    needs=["restart"],
    alone=True,
)
async def graceful_restart(ctx: CaseContext) -> None:
    key = ctx.key()
    run_id, raw = await _finished_run(ctx, key)
    enrolment = ctx.worker.enrolments["durable"]
    code = await ctx.stop_worker()
    expect_equal(code, 0, "exit status of a graceful stop")
    for name in ("endpoint.json", "certificate.pem"):
        expect(not (ctx.worker.public_api_dir / name).exists(), f"{name} was left behind by a graceful stop")
    await ctx.start_worker()
    info = await ctx.info(ctx.api("durable"))
    expect_equal(info.instance_id, enrolment.instance_id, "instance_id after the restart")
    live = await asyncio.to_thread(handshake, *ctx.worker.address)
    expect_equal(live.leaf_sha256, enrolment.certificate_sha256, "the leaf's SHA-256 after the restart")
    await _kept(ctx, run_id, raw, key)


@case(
    "durability.kill-and-settle",
    ["W5", "W6", "W13"],
    "after a kill: committed runs and keys are kept, a waiting run is INTERRUPTED, "
    "an effect OUTCOME_UNKNOWN, a plain running run resumes",
    needs=["kill"],
    alone=True,
)
async def kill_and_settle(ctx: CaseContext) -> None:
    key = ctx.key()
    run_id, raw = await _finished_run(ctx, key)
    api = ctx.api("durable")
    waiting = (await ctx.create(api, script("ask Keep going? | yes"))).run.run_id
    effect = (await ctx.create(api, script("effect", "sleep forever"))).run.run_id
    resumes = (await ctx.create(api, script("sleep 1500", "say resumed"))).run.run_id
    await ctx.wait_status(api, waiting, runs.RUN_STATUS_WAITING_FOR_INPUT)
    seen = await ctx.watch(api, effect, limit=4, seconds=5)
    expect(
        any(e.WhichOneof("payload") == "tool_activity" for e in seen.events), "the effect was never recorded"
    )
    await ctx.wait_status(api, resumes, runs.RUN_STATUS_RUNNING)
    await ctx.kill_worker()
    await ctx.start_worker()
    await _kept(ctx, run_id, raw, key)
    api = ctx.api("durable")
    outcomes = {
        name: (await ctx.settle(api, rid)).status
        for name, rid in (("waiting", waiting), ("effect", effect), ("resumes", resumes))
    }
    expect_equal(
        outcomes,
        {
            "waiting": runs.RUN_STATUS_INTERRUPTED,
            "effect": runs.RUN_STATUS_OUTCOME_UNKNOWN,
            "resumes": runs.RUN_STATUS_SUCCEEDED,
        },
        "statuses after the kill",
    )
    expect("resumed" in (await ctx.get(api, resumes)).result.output_text, "the resumed run lost its output")
