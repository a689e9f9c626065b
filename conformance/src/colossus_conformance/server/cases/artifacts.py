"""Artifacts (W7, W11): bound to their size and digest, chunked within the advertised cap."""

from __future__ import annotations

import hashlib

from colossus_agent_client.api.v1alpha1 import artifacts_pb2 as art

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, refused
from ..wire import Api
from ._common import expect_error

NEEDS = ["artifacts"]


def _upload(
    data: bytes, chunk: int, size: int | None = None, digest: str | None = None
) -> list[art.UploadArtifactRequest]:
    manifest = art.ArtifactManifest(
        media_type="text/plain",
        size_bytes=len(data) if size is None else size,
        sha256=digest or hashlib.sha256(data).hexdigest(),
        display_name="n.txt",
    )
    parts = [art.UploadArtifactRequest(manifest=manifest)]
    parts += [art.UploadArtifactRequest(chunk=data[i : i + chunk]) for i in range(0, len(data), chunk)]
    return parts


async def _send(api: Api, parts: list[art.UploadArtifactRequest]) -> art.Artifact:
    return (
        await api.client_stream("ArtifactService/UploadArtifact", parts, art.UploadArtifactResponse)
    ).artifact


async def _download(api: Api, artifact_id: str) -> list[art.DownloadArtifactResponse]:
    request = art.DownloadArtifactRequest(artifact_id=artifact_id)
    return [
        m
        async for m in api.server_stream(
            "ArtifactService/DownloadArtifact", request, art.DownloadArtifactResponse
        )
    ]


@case(
    "artifacts.round-trip",
    ["W11"],
    "an upload comes back byte for byte: metadata first, chunks within the cap",
    needs=NEEDS,
)
async def round_trip(ctx: CaseContext) -> None:
    api = ctx.api()
    cap = (await ctx.info(api)).limits.max_artifact_chunk_bytes
    data = bytes(range(256)) * ((cap * 2 + 1000) // 256)
    stored = await _send(api, _upload(data, cap))
    expect_equal(
        (stored.size_bytes, stored.sha256), (len(data), hashlib.sha256(data).hexdigest()), "stored metadata"
    )
    messages = await _download(api, stored.artifact_id)
    expect(
        messages and messages[0].WhichOneof("part") == "artifact", "the download does not start with metadata"
    )
    chunks = [m.chunk for m in messages[1:]]
    expect(all(m.WhichOneof("part") == "chunk" for m in messages[1:]), "metadata sent twice")
    expect(all(0 < len(c) <= cap for c in chunks), f"a chunk outside 1..{cap} bytes")
    expect(b"".join(chunks) == data, "downloaded bytes differ")


@case(
    "artifacts.digest-bound",
    ["W7"],
    "bytes that do not match the declared SHA-256 are ARTIFACT_INTEGRITY_MISMATCH",
    needs=NEEDS,
)
async def digest_bound(ctx: CaseContext) -> None:
    data = b"the real bytes"
    parts = _upload(data, 1024, digest=hashlib.sha256(b"other bytes").hexdigest())
    error = await refused(_send(ctx.api(), parts))
    expect_error(error, "INVALID_ARGUMENT", "ARTIFACT_INTEGRITY_MISMATCH", "a wrong digest")


@case(
    "artifacts.size-bound",
    ["W7"],
    "more or fewer bytes than declared is ARTIFACT_INTEGRITY_MISMATCH",
    needs=NEEDS,
)
async def size_bound(ctx: CaseContext) -> None:
    data = b"0123456789"
    for declared in (len(data) - 1, len(data) + 1):
        error = await refused(_send(ctx.api(), _upload(data, 4, size=declared)))
        expect_error(
            error, "INVALID_ARGUMENT", "ARTIFACT_INTEGRITY_MISMATCH", f"{len(data)} bytes declared {declared}"
        )


@case(
    "artifacts.chunk-cap",
    ["W7", "W11"],
    "a chunk over max_artifact_chunk_bytes is FIELD_INVALID",
    needs=NEEDS,
)
async def chunk_cap(ctx: CaseContext) -> None:
    api = ctx.api()
    cap = (await ctx.info(api)).limits.max_artifact_chunk_bytes
    data = b"c" * (cap + 1)
    expect_error(
        await refused(_send(api, _upload(data, cap + 1))),
        "INVALID_ARGUMENT",
        "FIELD_INVALID",
        f"a chunk of {cap + 1} bytes",
    )


@case(
    "artifacts.declared-too-large",
    ["W11"],
    "a manifest over max_artifact_bytes is RESOURCE_EXHAUSTED/ARTIFACT_TOO_LARGE",
    needs=NEEDS,
)
async def too_large(ctx: CaseContext) -> None:
    api = ctx.api()
    allowed = (await ctx.info(api)).limits.max_artifact_bytes
    error = await refused(_send(api, _upload(b"", 1, size=allowed + 1)))
    expect_error(error, "RESOURCE_EXHAUSTED", "ARTIFACT_TOO_LARGE", f"declared {allowed + 1} bytes")


@case("artifacts.manifest-first", ["W7"], "an upload that starts with a chunk is FIELD_INVALID", needs=NEEDS)
async def manifest_first(ctx: CaseContext) -> None:
    parts = [art.UploadArtifactRequest(chunk=b"early"), *_upload(b"early", 8)]
    expect_error(await refused(_send(ctx.api(), parts)), "INVALID_ARGUMENT", "FIELD_INVALID", "a chunk first")


@case(
    "artifacts.other-application",
    ["W4"],
    "another application's artifact is NOT_FOUND/ARTIFACT_NOT_FOUND",
    needs=NEEDS,
)
async def other_application(ctx: CaseContext) -> None:
    stored = await _send(ctx.api("alpha"), _upload(b"private", 8))
    error = await refused(_download(ctx.api("beta"), stored.artifact_id))
    expect_error(error, "NOT_FOUND", "ARTIFACT_NOT_FOUND", "beta downloading alpha's artifact")
