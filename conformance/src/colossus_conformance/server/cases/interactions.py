"""Prompts and approvals (W10): a displayed choice, a one-use binding, one answer only."""

from __future__ import annotations

from colossus_agent_client.api.v1alpha1 import run_service_pb2 as rs
from colossus_agent_client.api.v1alpha1 import runs_pb2 as runs

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext, refused, script
from ..wire import Api
from ._common import expect_error


async def _respond(api: Api, request: rs.RespondInteractionRequest) -> runs.Run:
    reply = await api.unary("RunService/RespondInteraction", request, rs.RespondInteractionResponse)
    return reply.run


@case(
    "interactions.prompt-choice-must-match",
    ["W10"],
    "a prompt answer that is not a displayed choice is INTERACTION_ANSWER_MISMATCH; a choice resumes the run",
)
async def prompt_choice(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("ask Which? | left | right", "say after"))).run.run_id
    waiting = await ctx.wait_status(api, run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)
    interaction = waiting.pending_interaction
    expect_equal(list(interaction.prompt.choices), ["left", "right"], "choices")
    wrong = rs.RespondInteractionRequest(
        run_id=run_id, interaction_id=interaction.interaction_id, prompt=rs.PromptAnswer(choice="Left")
    )
    expect_error(
        await refused(_respond(api, wrong)), "INVALID_ARGUMENT", "INTERACTION_ANSWER_MISMATCH", "'Left'"
    )
    right = rs.RespondInteractionRequest(
        run_id=run_id, interaction_id=interaction.interaction_id, prompt=rs.PromptAnswer(choice="right")
    )
    await _respond(api, right)
    final = await ctx.settle(api, run_id)
    expect_equal(final.status, runs.RUN_STATUS_SUCCEEDED, "status after the answer")
    watched = await ctx.watch(api, run_id)
    resolved = [
        e.interaction_resolved for e in watched.events if e.WhichOneof("payload") == "interaction_resolved"
    ]
    expect_equal(
        [(r.outcome, r.choice) for r in resolved],
        [(runs.INTERACTION_OUTCOME_ANSWERED, "right")],
        "resolutions",
    )


@case(
    "interactions.one-answer-only",
    ["W10"],
    "a second answer is FAILED_PRECONDITION/INTERACTION_ALREADY_RESOLVED",
)
async def one_answer(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("ask Sure? | yes | no", "sleep 2000"))).run.run_id
    interaction = (await ctx.wait_status(api, run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)).pending_interaction
    answer = rs.RespondInteractionRequest(
        run_id=run_id, interaction_id=interaction.interaction_id, prompt=rs.PromptAnswer(choice="yes")
    )
    await _respond(api, answer)
    answer.prompt.choice = "no"
    error = await refused(_respond(api, answer))
    expect_error(error, "FAILED_PRECONDITION", "INTERACTION_ALREADY_RESOLVED", "a second answer")
    await api.unary("RunService/CancelRun", rs.CancelRunRequest(run_id=run_id), rs.CancelRunResponse)


@case(
    "interactions.approval-binding",
    ["W10"],
    "an approval answer must repeat its binding; approved, the tool runs",
)
async def approval_binding(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("approve shell.run"))).run.run_id
    interaction = (await ctx.wait_status(api, run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)).pending_interaction
    binding = interaction.approval.binding
    expect(binding, "the approval carries no binding")
    expect_equal(interaction.approval.action_class, runs.ACTION_CLASS_EXECUTE, "action class of shell.run")
    wrong = rs.RespondInteractionRequest(
        run_id=run_id,
        interaction_id=interaction.interaction_id,
        approval=rs.ApprovalAnswer(
            binding=binding[:-1] + ("x" if binding[-1] != "x" else "y"), decision=rs.APPROVAL_DECISION_APPROVE
        ),
    )
    expect_error(
        await refused(_respond(api, wrong)),
        "INVALID_ARGUMENT",
        "INTERACTION_ANSWER_MISMATCH",
        "a wrong binding",
    )
    wrong.approval.binding = binding
    await _respond(api, wrong)
    watched = await ctx.watch(api, run_id)
    phases = [e.tool_activity.phase for e in watched.events if e.WhichOneof("payload") == "tool_activity"]
    expect_equal(
        phases, [runs.TOOL_ACTIVITY_PHASE_STARTED, runs.TOOL_ACTIVITY_PHASE_COMPLETED], "tool phases"
    )
    expect_equal(watched.events[-1].terminated.status, runs.RUN_STATUS_SUCCEEDED, "terminal status")


@case(
    "interactions.unknown-interaction",
    ["W10"],
    "an answer to an interaction that does not exist is NOT_FOUND",
)
async def unknown(ctx: CaseContext) -> None:
    api = ctx.api()
    run_id = (await ctx.create(api, script("ask Hm? | a", "sleep 1000"))).run.run_id
    await ctx.wait_status(api, run_id, runs.RUN_STATUS_WAITING_FOR_INPUT)
    answer = rs.RespondInteractionRequest(
        run_id=run_id, interaction_id="int_nope", prompt=rs.PromptAnswer(choice="a")
    )
    expect_error(
        await refused(_respond(api, answer)), "NOT_FOUND", "INTERACTION_NOT_FOUND", "an unknown interaction"
    )
    await api.unary("RunService/CancelRun", rs.CancelRunRequest(run_id=run_id), rs.CancelRunResponse)
