"""An answer to an interaction that is already resolved never reaches the next one (W10).

A planted bug that checked only "is something pending?" instead of "is this interaction
the pending one?" let the rest of the suite pass: replaying the first answer of a run
then answered its second question. These tests replay an old answer while a newer
interaction waits and require it to be refused, with the newer one left untouched.
"""

from __future__ import annotations

import uuid

import grpc

from conftest import expect_error, pb, script

S = pb.runs
OK = grpc.StatusCode


def _pending_other_than(c, run_id, previous):
    for _ in range(200):
        run = c.wait_status(run_id, S.RUN_STATUS_WAITING_FOR_INPUT)
        if run.pending_interaction.interaction_id != previous:
            return run.pending_interaction
    raise AssertionError("the second interaction never became pending")


def test_a_replayed_prompt_answer_does_not_answer_the_next_prompt(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(uuid.uuid4().hex, script("ask First? | yes | no", "ask Second? | yes | no",
                                            "say done")).run

    def answer(interaction_id, choice):
        return c.runs.RespondInteraction(pb.rs.RespondInteractionRequest(
            run_id=run.run_id, interaction_id=interaction_id,
            prompt=pb.rs.PromptAnswer(choice=choice)), metadata=c.md)

    first = c.wait_status(run.run_id, S.RUN_STATUS_WAITING_FOR_INPUT).pending_interaction
    answer(first.interaction_id, "yes")
    second = _pending_other_than(c, run.run_id, first.interaction_id)
    expect_error(lambda: answer(first.interaction_id, "yes"), OK.FAILED_PRECONDITION,
                 "INTERACTION_ALREADY_RESOLVED")
    assert c.get(run.run_id).pending_interaction.interaction_id == second.interaction_id
    answer(second.interaction_id, "no")
    c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    resolved = [(e.interaction_resolved.interaction_id, e.interaction_resolved.choice)
                for e in c.watch(run.run_id) if e.HasField("interaction_resolved")]
    assert resolved == [(first.interaction_id, "yes"), (second.interaction_id, "no")]


def test_a_replayed_approval_does_not_decide_the_next_approval(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(uuid.uuid4().hex, script("approve shell.run", "approve shell.run",
                                            "say end")).run

    def decide(interaction, decision):
        return c.runs.RespondInteraction(pb.rs.RespondInteractionRequest(
            run_id=run.run_id, interaction_id=interaction.interaction_id,
            approval=pb.rs.ApprovalAnswer(binding=interaction.approval.binding,
                                          decision=decision)), metadata=c.md)

    first = c.wait_status(run.run_id, S.RUN_STATUS_WAITING_FOR_INPUT).pending_interaction
    decide(first, pb.rs.APPROVAL_DECISION_APPROVE)
    second = _pending_other_than(c, run.run_id, first.interaction_id)
    assert second.approval.binding != first.approval.binding
    expect_error(lambda: decide(first, pb.rs.APPROVAL_DECISION_APPROVE), OK.FAILED_PRECONDITION,
                 "INTERACTION_ALREADY_RESOLVED")
    assert c.get(run.run_id).pending_interaction.interaction_id == second.interaction_id
    decide(second, pb.rs.APPROVAL_DECISION_DENY)
    outcomes = [e.interaction_resolved.outcome for e in c.watch(run.run_id, timeout=30)
                if e.HasField("interaction_resolved")]
    assert outcomes == [S.INTERACTION_OUTCOME_APPROVED, S.INTERACTION_OUTCOME_DENIED]
