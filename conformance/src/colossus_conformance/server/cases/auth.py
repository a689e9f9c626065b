"""Authentication and scopes (W3, W4): every call carries an exact, active bearer with its scope."""

from __future__ import annotations

from colossus_agent_client.api.v1alpha1 import artifacts_pb2 as art
from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs
from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ...worker import unknown_bearer
from ..catalogue import case, expect
from ..context import CaseContext, refused, script
from ._common import expect_error


@case("auth.missing-bearer", ["W4"], "a call without authorization is UNAUTHENTICATED/CREDENTIAL_MISSING")
async def missing_bearer(ctx: CaseContext) -> None:
    api = ctx.api_with(None)
    expect_error(await refused(ctx.info(api)), "UNAUTHENTICATED", "CREDENTIAL_MISSING", "GetServerInfo")
    expect_error(await refused(ctx.list_page(api)), "UNAUTHENTICATED", "CREDENTIAL_MISSING", "ListRuns")


@case("auth.unknown-bearer", ["W4"], "a well-formed bearer the worker never issued is refused")
async def unknown(ctx: CaseContext) -> None:
    error = await refused(ctx.list_page(ctx.api_with(unknown_bearer())))
    expect_error(error, "UNAUTHENTICATED", "CREDENTIAL_INVALID", "ListRuns")


@case(
    "auth.bearer-must-match-exactly",
    ["W4"],
    "the issued bearer with its last character changed, or one character more, is refused",
)
async def bearer_exact(ctx: CaseContext) -> None:
    bearer = ctx.worker.enrolments["alpha"].bearer
    changed = bearer[:-1] + ("A" if bearer[-1] != "A" else "B")
    for variant in (changed, bearer + "A"):
        error = await refused(ctx.list_page(ctx.api_with(variant)))
        expect(
            error is not None and error.code == "UNAUTHENTICATED", f"an altered bearer was accepted ({error})"
        )


@case("auth.scheme-in-any-case", ["W4"], "the scheme name is read in any case: `bearer` works as `Bearer`")
async def scheme_any_case(ctx: CaseContext) -> None:
    api = ctx.api_with(None)
    bearer = ctx.worker.enrolments["alpha"].bearer
    header = [("authorization", f"bearer {bearer}")]
    await api.unary("RunService/ListRuns", rs.ListRunsRequest(), rs.ListRunsResponse, metadata=header)


@case("auth.create-needs-runs-execute", ["W3", "W4"], "CreateRun without runs:execute is SCOPE_MISSING")
async def create_scope(ctx: CaseContext) -> None:
    error = await refused(ctx.create(ctx.api("reader"), script("say hi")))
    expect_error(error, "PERMISSION_DENIED", "SCOPE_MISSING", "CreateRun by runs:read only")


@case(
    "auth.reads-need-runs-read", ["W3", "W4"], "GetRun, ListRuns and WatchRun of one's own run need runs:read"
)
async def read_scope(ctx: CaseContext) -> None:
    api = ctx.api("writer")
    run = (await ctx.create(api, script("say hi"))).run
    expect_error(await refused(ctx.get(api, run.run_id)), "PERMISSION_DENIED", "SCOPE_MISSING", "GetRun")
    expect_error(await refused(ctx.list_page(api)), "PERMISSION_DENIED", "SCOPE_MISSING", "ListRuns")
    watched = await ctx.watch(api, run.run_id, seconds=5)
    expect(not watched.events, "WatchRun without runs:read delivered events")
    expect_error(watched.error, "PERMISSION_DENIED", "SCOPE_MISSING", "WatchRun")


@case("auth.cancel-needs-runs-control", ["W3", "W4", "W10"], "CancelRun of one's own run needs runs:control")
async def cancel_scope(ctx: CaseContext) -> None:
    api = ctx.api("prompter")
    run = (await ctx.create(api, script("sleep 3000"))).run
    error = await refused(
        api.unary("RunService/CancelRun", rs.CancelRunRequest(run_id=run.run_id), rs.CancelRunResponse)
    )
    expect_error(error, "PERMISSION_DENIED", "SCOPE_MISSING", "CancelRun by a grant without runs:control")


@case(
    "auth.prompt-needs-prompts-respond",
    ["W3", "W4", "W10"],
    "answering a prompt needs prompts:respond, even with approvals:respond",
)
async def prompt_scope(ctx: CaseContext) -> None:
    api = ctx.api("approver")
    run = (await ctx.create(api, script("ask Go? | yes | no"))).run
    pending = (await ctx.wait_status(api, run.run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)).pending_interaction
    expect(pending.WhichOneof("kind") == "prompt", "no pending prompt")
    answer = rs.RespondInteractionRequest(
        run_id=run.run_id, interaction_id=pending.interaction_id, prompt=rs.PromptAnswer(choice="yes")
    )
    error = await refused(api.unary("RunService/RespondInteraction", answer, rs.RespondInteractionResponse))
    expect_error(error, "PERMISSION_DENIED", "SCOPE_MISSING", "answering a prompt without prompts:respond")


@case(
    "auth.approval-needs-approvals-respond",
    ["W3", "W4", "W10"],
    "answering an approval needs approvals:respond, even with prompts:respond",
)
async def approval_scope(ctx: CaseContext) -> None:
    api = ctx.api("prompter")
    run = (await ctx.create(api, script("approve shell.run"))).run
    pending = (await ctx.wait_status(api, run.run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)).pending_interaction
    expect(pending.WhichOneof("kind") == "approval", "no pending approval")
    answer = rs.RespondInteractionRequest(
        run_id=run.run_id,
        interaction_id=pending.interaction_id,
        approval=rs.ApprovalAnswer(binding=pending.approval.binding, decision=rs.APPROVAL_DECISION_APPROVE),
    )
    error = await refused(api.unary("RunService/RespondInteraction", answer, rs.RespondInteractionResponse))
    expect_error(
        error, "PERMISSION_DENIED", "SCOPE_MISSING", "answering an approval without approvals:respond"
    )


@case(
    "auth.artifacts-need-their-scopes",
    ["W3", "W4"],
    "UploadArtifact needs artifacts:write and DownloadArtifact artifacts:read",
    needs=["artifacts"],
)
async def artifact_scopes(ctx: CaseContext) -> None:
    api = ctx.api("prompter")
    manifest = art.ArtifactManifest(
        media_type="text/plain",
        size_bytes=0,
        sha256="e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    )
    error = await refused(
        api.client_stream(
            "ArtifactService/UploadArtifact",
            [art.UploadArtifactRequest(manifest=manifest)],
            art.UploadArtifactResponse,
        )
    )
    expect_error(error, "PERMISSION_DENIED", "SCOPE_MISSING", "UploadArtifact")

    async def download() -> None:
        async for _ in api.server_stream(
            "ArtifactService/DownloadArtifact",
            art.DownloadArtifactRequest(artifact_id="art_unknown"),
            art.DownloadArtifactResponse,
        ):
            pass

    expect_error(await refused(download()), "PERMISSION_DENIED", "SCOPE_MISSING", "DownloadArtifact")
