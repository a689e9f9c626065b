"""Watch sequencing on the server (W8): from 1, exclusive cursors, exact replays, one terminal event."""

from __future__ import annotations

import asyncio

from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, script
from ._common import expect_error

SCRIPT = script("say one", "say two", "tool filesystem.read", "say three")


async def _finished(ctx: CaseContext) -> tuple[str, list[int]]:
    api = ctx.api()
    run_id = (await ctx.create(api, SCRIPT)).run.run_id
    watched = await ctx.watch(api, run_id)
    expect(watched.error is None and not watched.timed_out, f"the watch ended with {watched.error}")
    return run_id, watched.sequences


@case("watch.sequences-from-one", ["W8"], "a watch from 0 delivers sequences 1, 2, 3, ... with no gap")
async def from_one(ctx: CaseContext) -> None:
    _, sequences = await _finished(ctx)
    expect_equal(sequences, list(range(1, len(sequences) + 1)), "sequences")


@case("watch.resume-after-cursor", ["W8"], "after_sequence is exclusive: a watch after k starts at k+1")
async def after_cursor(ctx: CaseContext) -> None:
    run_id, sequences = await _finished(ctx)
    api = ctx.api()
    for cursor in (1, 3, len(sequences) - 1):
        resumed = await ctx.watch(api, run_id, after=cursor)
        expect_equal(resumed.sequences, sequences[cursor:], f"sequences after {cursor}")


@case(
    "watch.after-the-last-event",
    ["W8"],
    "a watch after a finished run's last event ends cleanly with nothing",
)
async def after_last(ctx: CaseContext) -> None:
    run_id, sequences = await _finished(ctx)
    resumed = await ctx.watch(ctx.api(), run_id, after=sequences[-1], seconds=5)
    expect(not resumed.timed_out, "the watch stayed open after the terminal event")
    expect(resumed.error is None, f"the watch ended with {resumed.error}")
    expect_equal(resumed.sequences, [], "events after the last one")


@case("watch.exact-replay", ["W8", "W5"], "two watches of a finished run deliver byte-identical messages")
async def exact_replay(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, SCRIPT)).run.run_id
    first = await ctx.watch(api, run_id)
    second = await ctx.watch(ctx.api(), run_id)
    third = await ctx.watch(api, run_id, after=2)
    expect_equal(len(second.raw), len(first.raw), "replayed message count")
    expect(second.raw == first.raw, "a replay's bytes differ from the first delivery")
    expect(third.raw == first.raw[2:], "a resumed replay's bytes differ from the first delivery")


@case(
    "watch.one-terminal-event-last",
    ["W8"],
    "exactly one terminal event, last, then the stream closes with OK",
)
async def one_terminal(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, SCRIPT)).run.run_id
    for attempt in (await ctx.watch(api, run_id), await ctx.watch(api, run_id)):
        expect_equal(attempt.terminal_count, 1, "terminal events")
        expect_equal(attempt.events[-1].WhichOneof("payload"), "terminated", "the last event")
        expect(attempt.error is None and not attempt.timed_out, f"the stream ended with {attempt.error}")


@case(
    "watch.live-then-terminal", ["W8"], "a watch opened while the run waits gets the live events and the end"
)
async def live(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("say early", "sleep 400", "say late"))).run.run_id
    watched = await ctx.watch(api, run_id)
    text = "".join(e.output_delta.text for e in watched.events if e.WhichOneof("payload") == "output_delta")
    expect_equal(text, "earlylate", "output deltas")
    expect_equal(watched.sequences, list(range(1, len(watched.sequences) + 1)), "sequences")
    expect_equal(watched.terminal_count, 1, "terminal events")


@case("watch.closing-does-not-cancel", ["W8"], "a client that closes its watch leaves the run running")
async def closing(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("say started", "sleep 1500", "say done"))).run.run_id
    partial = await ctx.watch(ctx.api(), run_id, limit=2)
    expect(len(partial.events) == 2, "the watch delivered fewer than two events")
    await asyncio.sleep(0.2)
    run = await ctx.get(api, run_id)
    expect(
        run.status in (runs.RUN_STATUS_RUNNING, runs.RUN_STATUS_QUEUED), f"status after close: {run.status}"
    )
    final = await ctx.settle(api, run_id)
    expect_equal(final.status, runs.RUN_STATUS_SUCCEEDED, "final status")


@case("watch.unknown-run", ["W8", "W4"], "watching a run ID that does not exist is NOT_FOUND/RUN_NOT_FOUND")
async def unknown(ctx: CaseContext) -> None:
    watched = await ctx.watch(ctx.api(), "run_doesnotexist000", seconds=5)
    expect_error(watched.error, "NOT_FOUND", "RUN_NOT_FOUND", "WatchRun")
