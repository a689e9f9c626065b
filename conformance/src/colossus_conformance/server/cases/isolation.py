"""Application isolation (W4, W6, W9): one application never sees, watches, cancels or answers
another's runs, and keys and page tokens belong to one application."""

from __future__ import annotations

from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs
from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, refused, script
from ._common import expect_error


@case(
    "isolation.foreign-run-not-found",
    ["W4"],
    "another application's run is NOT_FOUND to GetRun, WatchRun, CancelRun and RespondInteraction",
)
async def foreign_run(ctx: CaseContext) -> None:
    alpha, beta = ctx.api("alpha"), ctx.api("beta")
    run = (await ctx.create(alpha, script("ask Proceed? | yes | no"))).run
    waiting = await ctx.wait_status(alpha, run.run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)
    interaction = waiting.pending_interaction.interaction_id
    expect_error(await refused(ctx.get(beta, run.run_id)), "NOT_FOUND", "RUN_NOT_FOUND", "GetRun")
    watched = await ctx.watch(beta, run.run_id, seconds=5)
    expect(not watched.events, "another application's watch delivered events")
    expect_error(watched.error, "NOT_FOUND", "RUN_NOT_FOUND", "WatchRun")
    cancel = beta.unary("RunService/CancelRun", rs.CancelRunRequest(run_id=run.run_id), rs.CancelRunResponse)
    expect_error(await refused(cancel), "NOT_FOUND", "RUN_NOT_FOUND", "CancelRun")
    answer = rs.RespondInteractionRequest(
        run_id=run.run_id, interaction_id=interaction, prompt=rs.PromptAnswer(choice="yes")
    )
    respond = beta.unary("RunService/RespondInteraction", answer, rs.RespondInteractionResponse)
    expect_error(await refused(respond), "NOT_FOUND", None, "RespondInteraction")
    after = await ctx.get(alpha, run.run_id)
    expect_equal(after.status, runs.RUN_STATUS_WAITING_FOR_INPUT, "the owner's run status after the attempts")
    expect_equal(after.pending_interaction.interaction_id, interaction, "the owner's pending interaction")
    await alpha.unary("RunService/CancelRun", rs.CancelRunRequest(run_id=run.run_id), rs.CancelRunResponse)


@case("isolation.listing-is-private", ["W4", "W9"], "ListRuns never lists another application's runs")
async def listing_private(ctx: CaseContext) -> None:
    alpha, beta = ctx.api("alpha"), ctx.api("beta")
    mine = (await ctx.create(beta, script("say mine"))).run.run_id
    theirs = (await ctx.create(alpha, script("say theirs"))).run.run_id
    listed = await ctx.list_all(beta)
    expect(theirs not in listed, "beta's listing holds alpha's run")
    expect(mine in listed, "beta's listing lacks beta's own run")


@case(
    "isolation.idempotency-keys-per-application",
    ["W6"],
    "two applications using one key with the same request get two different runs",
)
async def keys_per_application(ctx: CaseContext) -> None:
    key = ctx.key()
    first = await ctx.create(ctx.api("alpha"), script("say shared key"), key=key)
    second = await ctx.create(ctx.api("beta"), script("say shared key"), key=key)
    expect(first.run.run_id != second.run.run_id, "beta received alpha's run for alpha's key")
    expect(not second.replayed, "beta's first create was reported as a replay")


@case(
    "isolation.foreign-page-token",
    ["W9"],
    "a page token taken from another application is PAGE_TOKEN_INVALID",
)
async def foreign_token(ctx: CaseContext) -> None:
    alpha, beta = ctx.api("pages-b"), ctx.api("beta")
    await ctx.create(beta, script("say beta has a listing too"))
    for _ in range(4):
        await ctx.create(alpha, script("say page"))
    token = ""
    for _ in range(50):
        page = await ctx.list_page(alpha, token=token)
        token = page.next_page_token
        if token:
            break
    expect(token, "pages-b's listing of four runs never gave a page token")
    error = await refused(ctx.list_page(beta, token=token))
    expect_error(error, "INVALID_ARGUMENT", "PAGE_TOKEN_INVALID", "beta listing with pages-b's token")
