"""Hostile wire input (W7): bytes no SDK would send are refused as bad input, never INTERNAL."""

from __future__ import annotations

from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs

from ..catalogue import case, expect
from ..context import CaseContext, refused
from ..wire import RawBytes
from ._common import NEVER, expect_error

# Bodies that do not decode, or decode into nonsense.
BODIES = {
    "truncated-varint": b"\x08\xff",
    "length-past-end": b"\x0a\x50abc",
    "wrong-wire-type": b"\x0d\x00\x00\x00\x00",
    "invalid-utf8": b"\x0a\x02\xc3\x28",
    "group-tag": b"\x0b\x0c",
    "field-zero": b"\x00\x01",
    "deep-nesting": b"\x12\x80\x01" + b"\x12\x7e" * 42,
}
METHODS = (
    "RunService/CreateRun",
    "RunService/GetRun",
    "RunService/ListRuns",
    "RunService/CancelRun",
    "RunService/RespondInteraction",
)


@case(
    "hostile.malformed-bodies",
    ["W7"],
    "every malformed body to every unary RPC is a client error, never INTERNAL",
)
async def malformed(ctx: CaseContext) -> None:
    api = ctx.api()
    for method in METHODS:
        for name, body in BODIES.items():
            error = await refused(api.unary(method, RawBytes(body), RawBytes))
            code = "OK" if error is None else error.code
            expect(
                code not in NEVER and code != "STREAM_TERMINATED", f"{method} with {name}: {code} ({error})"
            )


@case(
    "hostile.parts-refused-before-decoding",
    ["W7"],
    "the 129th input part, sent as raw bytes, is INPUT_TOO_MANY_PARTS",
)
async def parts_raw(ctx: CaseContext) -> None:
    api = ctx.api()
    allowed = (await ctx.info(api)).limits.max_input_parts
    part = b"\x12\x03\x0a\x01x"
    body = b"\x0a\x04k-" + ctx.key()[-2:].encode() + part * (allowed + 1)
    error = await refused(api.unary("RunService/CreateRun", RawBytes(body), RawBytes))
    expect_error(error, "INVALID_ARGUMENT", "INPUT_TOO_MANY_PARTS", f"{allowed + 1} raw input parts")


@case("hostile.unknown-fields-ignored", ["W7"], "a request with unknown fields is served as without them")
async def unknown_fields(ctx: CaseContext) -> None:
    api = ctx.api()
    body = rs.ListRunsRequest().SerializeToString() + b"\xf8\x07\x01" + b"\x82\x08\x03abc"
    reply = await api.unary("RunService/ListRuns", RawBytes(body), RawBytes)
    rs.ListRunsResponse.FromString(reply.data)
