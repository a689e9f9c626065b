"""ListRuns (W9): newest first, bounded pages, tokens bound to their filter, stable while runs are created."""

from __future__ import annotations

from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs
from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, refused, script
from ._common import expect_error


@case(
    "pagination.newest-first-stable",
    ["W9"],
    "every run once, newest first, in bounded pages; runs created mid-listing do not shift it",
)
async def newest_first_stable(ctx: CaseContext) -> None:
    api = ctx.api("pages-a")
    limit = (await ctx.info(api)).limits.max_list_page_size
    created = [(await ctx.create(api, script(f"say {i}"))).run.run_id for i in range(7)]
    first = await ctx.list_page(api)
    expect(len(first.runs) <= limit, f"a page of {len(first.runs)} runs, over max_list_page_size {limit}")
    expect(first.next_page_token, "seven runs fit one page")
    later = [(await ctx.create(api, script("say later"))).run.run_id for _ in range(2)]
    listed = [r.run_id for r in first.runs]
    token = first.next_page_token
    while token:
        page = await ctx.list_page(api, token=token)
        expect(len(page.runs) <= limit, f"a page of {len(page.runs)} runs")
        listed += [r.run_id for r in page.runs]
        token = page.next_page_token
    expect_equal(listed, list(reversed(created)), "the listing begun before two more creates")
    fresh = await ctx.list_all(api)
    expect_equal(fresh, list(reversed(created + later)), "a fresh listing")


@case(
    "pagination.token-bound-to-filter",
    ["W9"],
    "a token used with another status filter is PAGE_TOKEN_INVALID",
)
async def bound_to_filter(ctx: CaseContext) -> None:
    api = ctx.api("pages-b")
    for _ in range(4):
        await ctx.create(api, script("say filtered"))
    token = ""
    for _ in range(50):
        page = await ctx.list_page(api, token=token)
        token = page.next_page_token
        if token and page.runs:
            break
    expect(token, "no page token")
    other = await refused(ctx.list_page(api, statuses=[runs.RUN_STATUS_CANCELLED], token=token))
    expect_error(other, "INVALID_ARGUMENT", "PAGE_TOKEN_INVALID", "the token under another filter")
    flipped = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    expect_error(
        await refused(ctx.list_page(api, token=flipped)),
        "INVALID_ARGUMENT",
        "PAGE_TOKEN_INVALID",
        "an altered token",
    )


@case("pagination.filter-selects", ["W9"], "a status filter lists only runs in those statuses")
async def filter_selects(ctx: CaseContext) -> None:
    api = ctx.api("pages-b")
    keep = (await ctx.create(api, script("sleep forever"))).run.run_id
    await api.unary("RunService/CancelRun", rs.CancelRunRequest(run_id=keep), rs.CancelRunResponse)
    await ctx.settle(api, keep)
    done = (await ctx.create(api, script("say done"))).run.run_id
    await ctx.settle(api, done)
    cancelled = await ctx.list_all(api, statuses=[runs.RUN_STATUS_CANCELLED])
    expect(keep in cancelled, "the cancelled run is missing from the CANCELLED listing")
    expect(done not in cancelled, "a SUCCEEDED run is in the CANCELLED listing")
    for run_id in cancelled:
        expect_equal((await ctx.get(api, run_id)).status, runs.RUN_STATUS_CANCELLED, f"status of {run_id}")


@case(
    "pagination.status-filter-bound",
    ["W7", "W9"],
    "more status values than max_list_status_filters is STATUS_FILTER_TOO_LARGE",
)
async def filter_bound(ctx: CaseContext) -> None:
    api = ctx.api("pages-b")
    allowed = (await ctx.info(api)).limits.max_list_status_filters
    statuses = [runs.RUN_STATUS_SUCCEEDED] * (allowed + 1)
    error = await refused(ctx.list_page(api, statuses=statuses))
    expect_error(error, "INVALID_ARGUMENT", "STATUS_FILTER_TOO_LARGE", f"{allowed + 1} status values")
