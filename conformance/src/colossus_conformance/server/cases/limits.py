"""Input limits (W7) and resource limits with their error details (W11)."""

from __future__ import annotations

import asyncio

from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs
from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect
from ..context import CaseContext, refused, script
from ._common import expect_error


@case("limits.input-parts", ["W7"], "one part more than max_input_parts is INPUT_TOO_MANY_PARTS")
async def input_parts(ctx: CaseContext) -> None:
    api = ctx.api()
    allowed = (await ctx.info(api)).limits.max_input_parts
    request = ctx.request("hello")
    request.input.extend(runs.InputPart(text="x") for _ in range(allowed))
    expect_error(
        await refused(ctx.create_request(api, request)),
        "INVALID_ARGUMENT",
        "INPUT_TOO_MANY_PARTS",
        f"{allowed + 1} input parts",
    )
    ok = ctx.request("hello")
    ok.input.extend(runs.InputPart(text="x") for _ in range(allowed - 1))
    await ctx.create_request(api, ok)


@case("limits.input-bytes", ["W7"], "text over max_input_bytes is INPUT_TOO_LARGE")
async def input_bytes(ctx: CaseContext) -> None:
    api = ctx.api()
    allowed = (await ctx.info(api)).limits.max_input_bytes
    request = ctx.request("x" * (allowed // 2 + 1))
    request.input.append(runs.InputPart(text="y" * (allowed // 2 + 1)))
    expect_error(
        await refused(ctx.create_request(api, request)),
        "INVALID_ARGUMENT",
        "INPUT_TOO_LARGE",
        f"{allowed + 2} bytes of input",
    )


@case("limits.max-turns-range", ["W7"], "max_turns above the advertised maximum is MAX_TURNS_OUT_OF_RANGE")
async def max_turns(ctx: CaseContext) -> None:
    api = ctx.api()
    allowed = (await ctx.info(api)).limits.max_turns
    error = await refused(ctx.create(api, script("say t"), max_turns=allowed + 1))
    expect_error(error, "INVALID_ARGUMENT", "MAX_TURNS_OUT_OF_RANGE", f"max_turns {allowed + 1}")
    run = (await ctx.create(api, script("say t"), max_turns=0)).run
    expect(run.max_turns == (await ctx.info(api)).limits.default_max_turns, "max_turns 0 is not the default")


@case("limits.selected-skills", ["W7"], "any selected_skills entry is SKILLS_NOT_SUPPORTED")
async def skills(ctx: CaseContext) -> None:
    error = await refused(ctx.create(ctx.api(), script("say s"), selected_skills=["x"]))
    expect_error(error, "INVALID_ARGUMENT", "SKILLS_NOT_SUPPORTED", "selected_skills")


@case(
    "limits.request-bytes",
    ["W11"],
    "a request over max_request_bytes is RESOURCE_EXHAUSTED/REQUEST_TOO_LARGE",
)
async def request_bytes(ctx: CaseContext) -> None:
    api = ctx.api()
    allowed = (await ctx.info(api)).limits.max_request_bytes
    request = ctx.request(script("say big"))
    request.end_user_id = "u"
    request.input.append(runs.InputPart(text="z" * (allowed + 16)))
    expect_error(
        await refused(ctx.create_request(api, request)),
        "RESOURCE_EXHAUSTED",
        "REQUEST_TOO_LARGE",
        "an oversized CreateRun",
    )


@case(
    "limits.create-rate-retry-info",
    ["W11"],
    "an empty per-application bucket is CREATE_RATE_LIMIT with a RetryInfo delay; waiting it out works",
    alone=True,
)
async def create_rate(ctx: CaseContext) -> None:
    api = ctx.api("throttled")
    bucket = (await ctx.info(api)).limits.create_rate_per_application
    expect(0 < bucket.burst <= 64, f"per-application burst {bucket.burst} is too large to drain in a case")
    # All at once, so a slow machine cannot refill the bucket between them.
    attempts = [
        api.unary("RunService/CreateRun", ctx.request(script("say r")), rs.CreateRunResponse)
        for _ in range(2 * bucket.burst + 2)
    ]
    errors = [e for e in await asyncio.gather(*(refused(a) for a in attempts)) if e is not None]
    error = errors[0] if errors else None
    error = expect_error(error, "RESOURCE_EXHAUSTED", "CREATE_RATE_LIMIT", "creates beyond the burst")
    expect(error.retry_delay is not None and error.retry_delay > 0, "no RetryInfo retry_delay")
    assert error.retry_delay is not None
    refill = max(bucket.refill_per_second, 1)
    expect(error.retry_delay <= 1.0 / refill + 0.01, f"retry_delay {error.retry_delay}s exceeds one refill")
    await asyncio.sleep(error.retry_delay)
    await api.unary("RunService/CreateRun", ctx.request(script("say r")), rs.CreateRunResponse)
