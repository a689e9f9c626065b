"""Another application's IDs answer exactly like IDs that never existed (W4).

Same status, reason, metadata and message text, on every RPC that takes a run
ID, including an answer to the other application's pending interaction and a
plan continuation naming its run.
"""

from __future__ import annotations

import uuid

import grpc

from conftest import error_info, pb, script

S = pb.runs


def _refusal(call):
    try:
        call()
    except grpc.RpcError as err:
        return (*error_info(err), err.details())
    raise AssertionError("the call was accepted")


def test_foreign_ids_are_indistinguishable_from_unknown_ones(shared_worker):
    owner, prober = shared_worker.client("app1"), shared_worker.client("app2")
    run = owner.create(uuid.uuid4().hex, script("ask Q? | yes")).run
    pending = owner.wait_status(run.run_id, S.RUN_STATUS_WAITING_FOR_INPUT).pending_interaction
    unknown = "run_" + "A" * (len(run.run_id) - 4)
    calls = {
        "GetRun": lambda r: prober.get(r),
        "CancelRun": lambda r: prober.cancel(r),
        "WatchRun": lambda r: prober.watch(r),
        "RespondInteraction": lambda r: prober.runs.RespondInteraction(
            pb.rs.RespondInteractionRequest(run_id=r, interaction_id=pending.interaction_id,
                                            prompt=pb.rs.PromptAnswer(choice="yes")),
            metadata=prober.md),
        "CreateRun(plan_action)": lambda r: prober.runs.CreateRun(pb.rs.CreateRunRequest(
            idempotency_key=uuid.uuid4().hex, input=[S.InputPart(text="x")],
            mode=S.RUN_MODE_PLAN, plan_action=S.PlanAction(
                source_run_id=r, revision=1, kind=S.PLAN_ACTION_KIND_REVISE)),
            metadata=prober.md),
    }
    for name, call in calls.items():
        foreign, missing = _refusal(lambda c=call: c(run.run_id)), _refusal(
            lambda c=call: c(unknown))
        assert foreign == missing, name
        assert foreign[:2] == (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND"), name
    # The probing changed nothing for the owner.
    assert owner.get(run.run_id).status == S.RUN_STATUS_WAITING_FOR_INPUT
    owner.cancel(run.run_id)
