"""Idempotent creation (W6): same key and request, same run; same key, other request, a conflict."""

from __future__ import annotations

import asyncio

from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, refused, script
from ._common import expect_error


@case(
    "idempotency.same-key-same-run", ["W6"], "the same key and request return the same run, marked replayed"
)
async def same_run(ctx: CaseContext) -> None:
    api, key = ctx.api(), ctx.key()
    first = await ctx.create(api, script("say once"), key=key)
    second = await ctx.create(api, script("say once"), key=key)
    expect(not first.replayed, "the first create was marked replayed")
    expect(second.replayed, "the second create was not marked replayed")
    expect_equal(second.run.run_id, first.run.run_id, "run ID of the replay")
    watched = await ctx.watch(api, first.run.run_id)
    text = "".join(e.output_delta.text for e in watched.events if e.WhichOneof("payload") == "output_delta")
    expect_equal(text, "once", "the run executed once")


@case(
    "idempotency.same-key-other-request-conflict",
    ["W6"],
    "the same key with another input is ALREADY_EXISTS/IDEMPOTENCY_CONFLICT",
)
async def conflict(ctx: CaseContext) -> None:
    api, key = ctx.api(), ctx.key()
    await ctx.create(api, script("say first"), key=key)
    error = await refused(ctx.create(api, script("say second"), key=key))
    expect_error(error, "ALREADY_EXISTS", "IDEMPOTENCY_CONFLICT", "a second request under the key")


@case(
    "idempotency.end-user-id-in-fingerprint",
    ["W6"],
    "end_user_id is part of the request: changing it conflicts",
)
async def end_user(ctx: CaseContext) -> None:
    api, key = ctx.api(), ctx.key()
    await ctx.create(api, script("say who"), key=key, end_user_id="user-1")
    error = await refused(ctx.create(api, script("say who"), key=key, end_user_id="user-2"))
    expect_error(error, "ALREADY_EXISTS", "IDEMPOTENCY_CONFLICT", "the same key with another end_user_id")


@case(
    "idempotency.trace-context-not-in-fingerprint",
    ["W6"],
    "a retry with another trace context is the same request",
)
async def trace_context(ctx: CaseContext) -> None:
    api, key = ctx.api(), ctx.key()
    first = await ctx.create(
        api,
        script("say traced"),
        key=key,
        trace_context=runs.TraceContext(
            traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        ),
    )
    second = await ctx.create(
        api,
        script("say traced"),
        key=key,
        trace_context=runs.TraceContext(
            traceparent="00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
        ),
    )
    expect_equal(second.run.run_id, first.run.run_id, "run ID under another trace context")


@case("idempotency.concurrent-creates-one-run", ["W6"], "eight concurrent creates under one key make one run")
async def concurrent(ctx: CaseContext) -> None:
    api, key = ctx.api(), ctx.key()
    replies = await asyncio.gather(*(ctx.create(api, script("say race"), key=key) for _ in range(8)))
    expect_equal(len({r.run.run_id for r in replies}), 1, "distinct runs")
    expect_equal(sum(1 for r in replies if not r.replayed), 1, "creates not marked replayed")


@case("idempotency.key-grammar", ["W6", "W7"], "an empty key or one with a space is IDEMPOTENCY_KEY_INVALID")
async def key_grammar(ctx: CaseContext) -> None:
    api = ctx.api()
    for key in ("", "has space", "x" * 129):
        request = ctx.request(script("say k"), "placeholder")
        request.idempotency_key = key
        error = await refused(ctx.create_request(api, request))
        expect_error(error, "INVALID_ARGUMENT", "IDEMPOTENCY_KEY_INVALID", f"key {key[:12]!r}")
