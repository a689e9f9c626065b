"""Fields that a planted one-line bug could drop from a check without another test noticing.

Each test here was written against a bug planted by hand in the worker (a field left out
of the idempotency fingerprint, a bound moved by one) that the rest of the suite let
through. They pin the boundary or the field itself, on the real worker.
"""

from __future__ import annotations

import uuid

import grpc

from conftest import expect_error, pb

S = pb.runs
OK = grpc.StatusCode


def key() -> str:
    return uuid.uuid4().hex


def _research(depth: int, *lanes: int) -> object:
    return S.ResearchOptions(depth=depth, lanes=list(lanes))


def test_research_depth_is_one_to_five_exactly(shared_worker):
    # W7: the bounded research depth accepts both ends and refuses one past either.
    c = shared_worker.client("app1")
    for depth in (1, 5):
        c.create(key(), "q", mode=S.RUN_MODE_RESEARCH,
                 research=_research(depth, S.EVIDENCE_LANE_REPOSITORY))
    for depth in (0, 6):
        info = expect_error(
            lambda d=depth: c.create(key(), "q", mode=S.RUN_MODE_RESEARCH,
                                     research=_research(d, S.EVIDENCE_LANE_REPOSITORY)),
            OK.INVALID_ARGUMENT, "FIELD_INVALID")
        assert info["field"] == "research.depth"


def test_research_options_are_in_the_fingerprint(shared_worker):
    # W6: a second request under the key with other research options is another request.
    c = shared_worker.client("app1")
    k = key()
    first = c.create(k, "q", mode=S.RUN_MODE_RESEARCH,
                     research=_research(2, S.EVIDENCE_LANE_REPOSITORY, S.EVIDENCE_LANE_WEB))
    changed = (
        _research(3, S.EVIDENCE_LANE_REPOSITORY, S.EVIDENCE_LANE_WEB),
        _research(2, S.EVIDENCE_LANE_REPOSITORY),
        _research(2, S.EVIDENCE_LANE_WEB, S.EVIDENCE_LANE_REPOSITORY),
    )
    for options in changed:
        expect_error(lambda o=options: c.create(k, "q", mode=S.RUN_MODE_RESEARCH, research=o),
                     OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    again = c.create(k, "q", mode=S.RUN_MODE_RESEARCH,
                     research=_research(2, S.EVIDENCE_LANE_REPOSITORY, S.EVIDENCE_LANE_WEB))
    assert again.replayed and again.run.run_id == first.run.run_id


def test_plan_action_is_in_the_fingerprint(shared_worker):
    # W6: the same key with another plan action kind or revision is another request; the
    # identical one replays even though the plan is no longer a Draft at that revision.
    c = shared_worker.client("app1")
    plan_run = c.create(key(), "Refactor the parser", mode=S.RUN_MODE_PLAN).run
    c.wait_status(plan_run.run_id, S.RUN_STATUS_SUCCEEDED)

    def action(k, kind, revision=1):
        return c.create(k, "go", plan_action=S.PlanAction(
            source_run_id=plan_run.run_id, revision=revision, kind=kind))

    k = key()
    first = action(k, S.PLAN_ACTION_KIND_EXECUTE_DIRECT)
    expect_error(lambda: action(k, S.PLAN_ACTION_KIND_EXECUTE_GOAL),
                 OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    expect_error(lambda: action(k, S.PLAN_ACTION_KIND_EXECUTE_DIRECT, revision=2),
                 OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    expect_error(lambda: c.create(k, "go"), OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    again = action(k, S.PLAN_ACTION_KIND_EXECUTE_DIRECT)
    assert again.replayed and again.run.run_id == first.run.run_id


def test_max_turns_is_fingerprinted_as_sent(shared_worker):
    # W6: 0 asks for the configured default, but it is not the same request as naming
    # that default explicitly; neither is naming it the same as leaving it out.
    c = shared_worker.client("app1")
    k = key()
    first = c.create(k, "x")
    assert first.run.max_turns == 20
    expect_error(lambda: c.create(k, "x", max_turns=20), OK.ALREADY_EXISTS,
                 "IDEMPOTENCY_CONFLICT")
    assert c.create(k, "x", max_turns=0).run.run_id == first.run.run_id
