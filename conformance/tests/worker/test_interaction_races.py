"""Answers and cancels that race each other (W10).

Many clients answer one interaction at the same moment, or answer while
another cancels. Exactly one answer is taken, every other gets a typed refusal,
and the run's history records each interaction's resolution exactly once.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import grpc

from conftest import error_info, pb, script

S = pb.runs
OK = grpc.StatusCode


def _pending(c, run_id):
    return c.wait_status(run_id, S.RUN_STATUS_WAITING_FOR_INPUT).pending_interaction


def _together(*calls):
    """Run the calls on threads released at once; each result or (code, reason)."""
    gate = threading.Barrier(len(calls))
    results: list[object] = [None] * len(calls)

    def run(index, call):
        gate.wait()
        try:
            results[index] = call()
        except grpc.RpcError as err:
            results[index] = error_info(err)[:2]

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _resolutions(c, run_id):
    return Counter(e.interaction_resolved.interaction_id for e in c.watch(run_id)
                   if e.HasField("interaction_resolved"))


def test_concurrent_answers_take_exactly_one(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(uuid.uuid4().hex, script("ask Pick? | a | b | c | d", "say done")).run
    ix = _pending(c, run.run_id)
    choices = ["a", "b", "c", "d"] * 3

    def answer(choice):
        return lambda: c.runs.RespondInteraction(pb.rs.RespondInteractionRequest(
            run_id=run.run_id, interaction_id=ix.interaction_id,
            prompt=pb.rs.PromptAnswer(choice=choice)), metadata=c.md)

    results = _together(*(answer(choice) for choice in choices))
    refused = [r for r in results if isinstance(r, tuple)]
    assert len(refused) == len(choices) - 1
    assert set(refused) == {(OK.FAILED_PRECONDITION, "INTERACTION_ALREADY_RESOLVED")}
    c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    assert _resolutions(c, run.run_id) == {ix.interaction_id: 1}


def test_answer_and_cancel_race_resolves_once(shared_worker):
    c = shared_worker.client("app1")
    for _ in range(5):
        run = c.create(uuid.uuid4().hex, script("approve shell.run", "sleep forever")).run
        ix = _pending(c, run.run_id)

        def answer(r=run, i=ix):
            return c.runs.RespondInteraction(pb.rs.RespondInteractionRequest(
                run_id=r.run_id, interaction_id=i.interaction_id,
                approval=pb.rs.ApprovalAnswer(binding=i.approval.binding,
                                              decision=pb.rs.APPROVAL_DECISION_APPROVE)),
                metadata=c.md)

        answered, cancelled = _together(answer, lambda r=run: c.cancel(r.run_id))
        assert not isinstance(cancelled, tuple)
        assert not isinstance(answered, tuple) or answered == (
            OK.FAILED_PRECONDITION, "INTERACTION_ALREADY_RESOLVED")
        final = c.wait_status(run.run_id, S.RUN_STATUS_CANCELLED)
        assert not final.HasField("pending_interaction")
        assert _resolutions(c, run.run_id) == {ix.interaction_id: 1}


def test_an_approval_binding_is_good_for_its_own_approval_only(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(uuid.uuid4().hex, script("approve shell.run", "approve shell.run")).run
    first = _pending(c, run.run_id)

    def decide(interaction, binding):
        return c.runs.RespondInteraction(pb.rs.RespondInteractionRequest(
            run_id=run.run_id, interaction_id=interaction.interaction_id,
            approval=pb.rs.ApprovalAnswer(binding=binding,
                                          decision=pb.rs.APPROVAL_DECISION_APPROVE)),
            metadata=c.md)

    decide(first, first.approval.binding)
    second = _pending(c, run.run_id)
    while second.interaction_id == first.interaction_id:
        second = _pending(c, run.run_id)
    try:
        decide(second, first.approval.binding)
    except grpc.RpcError as err:
        code, reason, metadata = error_info(err)
        assert (code, reason, metadata) == (OK.INVALID_ARGUMENT, "INTERACTION_ANSWER_MISMATCH",
                                            {"field": "approval.binding"})
    else:
        raise AssertionError("a used binding answered a second approval")
    decide(second, second.approval.binding)
    c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
