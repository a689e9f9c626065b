"""RunService behaviour over real TLS: W6-W10, W14 (and W7's wire guard)."""

from __future__ import annotations

import struct
import threading
import uuid

import grpc
import pytest

from colossus_reference_worker.wire.protowire import varint

from conftest import expect_error, pb, script

S = pb.runs
OK = grpc.StatusCode


def key() -> str:
    return uuid.uuid4().hex


def test_echo_run_succeeds_and_watch_replays_from_cursor(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), "hello there").run
    assert run.status == S.RUN_STATUS_QUEUED and run.run_id and run.session_id
    assert run.max_turns == 20  # 0 selects the advertised default
    events = c.watch(run.run_id)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert events[-1].WhichOneof("payload") == "terminated"
    assert events[-1].terminated.result.output_text == "hello there"
    final = c.get(run.run_id)
    assert final.status == S.RUN_STATUS_SUCCEEDED and final.last_sequence == len(events)
    assert final.result.output_text == "hello there"
    tail = c.watch(run.run_id, after=1)
    assert [e.sequence for e in tail] == list(range(2, len(events) + 1))
    assert tail == events[1:]  # same sequence, same content
    assert c.watch(run.run_id, after=len(events)) == []
    # Past a finished run's last event nothing can ever come: refused, naming the field.
    metadata = expect_error(lambda: c.watch(run.run_id, after=len(events) + 1),
                            OK.INVALID_ARGUMENT, "FIELD_INVALID")
    assert metadata == {"field": "after_sequence"}


def test_idempotent_replay_conflict_and_fingerprint(shared_worker):
    c = shared_worker.client("app1")
    k = key()
    first = c.create(k, "x", end_user_id="user@example")
    assert not first.replayed
    trace = pb.rs.CreateRunRequest(
        idempotency_key=k, input=[S.InputPart(text="x")], end_user_id="user@example",
        trace_context=S.TraceContext(
            traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
    again = c.runs.CreateRun(trace, metadata=c.md)
    assert again.replayed and again.run.run_id == first.run.run_id
    expect_error(lambda: c.create(k, "x", end_user_id="someone-else"),
                 OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    expect_error(lambda: c.create(k, "y", end_user_id="user@example"),
                 OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    # Keys are per application.
    other = shared_worker.client("app2").create(k, "x", end_user_id="user@example")
    assert not other.replayed and other.run.run_id != first.run.run_id
    expect_error(lambda: c.create("bad key!"), OK.INVALID_ARGUMENT, "IDEMPOTENCY_KEY_INVALID")


def test_other_applications_runs_are_not_found(shared_worker):
    run = shared_worker.client("app1").create(key()).run
    other = shared_worker.client("app2")
    for call in (lambda: other.get(run.run_id), lambda: other.cancel(run.run_id),
                 lambda: other.watch(run.run_id)):
        expect_error(call, OK.NOT_FOUND, "RUN_NOT_FOUND")
    expect_error(lambda: other.get("no-such-run"), OK.NOT_FOUND, "RUN_NOT_FOUND")


@pytest.mark.parametrize(("kwargs", "code", "reason", "field"), [
    ({"max_turns": 101}, OK.INVALID_ARGUMENT, "MAX_TURNS_OUT_OF_RANGE", "max_turns"),
    ({"role": "admin"}, OK.PERMISSION_DENIED, "ROLE_NOT_GRANTED", "role"),
    ({"session_id": "no/slash"}, OK.INVALID_ARGUMENT, "FIELD_INVALID", "session_id"),
    ({"end_user_id": "sp ace"}, OK.INVALID_ARGUMENT, "FIELD_INVALID", "end_user_id"),
    ({"mode": S.RUN_MODE_RESEARCH}, OK.INVALID_ARGUMENT, "FIELD_INVALID", "research"),
    ({"research": S.ResearchOptions(depth=1, lanes=[S.EVIDENCE_LANE_WEB])},
     OK.INVALID_ARGUMENT, "FIELD_INVALID", "research"),
    ({"mode": S.RUN_MODE_RESEARCH, "research": S.ResearchOptions(
        depth=2, lanes=[S.EVIDENCE_LANE_WEB, S.EVIDENCE_LANE_WEB])},
     OK.INVALID_ARGUMENT, "FIELD_INVALID", "research.lanes"),
    ({"trace_context": S.TraceContext(traceparent="01-zz")},
     OK.INVALID_ARGUMENT, "FIELD_INVALID", "trace_context.traceparent"),
])
def test_create_validation(shared_worker, kwargs, code, reason, field):
    c = shared_worker.client("app1")
    metadata = expect_error(lambda: c.create(key(), **kwargs), code, reason)
    assert metadata.get("field") == field


def test_input_bounds_and_script_errors(shared_worker):
    c = shared_worker.client("app1")
    parts = [S.InputPart(text="a")] * 128
    ok = c.runs.CreateRun(pb.rs.CreateRunRequest(idempotency_key=key(), input=parts),
                          metadata=c.md)
    assert ok.run.run_id
    big = "x" * (1024 * 1024 + 1)
    expect_error(lambda: c.create(key(), big), OK.INVALID_ARGUMENT, "INPUT_TOO_LARGE")
    expect_error(lambda: c.runs.CreateRun(pb.rs.CreateRunRequest(idempotency_key=key()),
                                          metadata=c.md), OK.INVALID_ARGUMENT, "FIELD_INVALID")
    expect_error(lambda: c.create(key(), script("tool rm.rf")), OK.INVALID_ARGUMENT,
                 "FIELD_INVALID")


def _ld(field: int, body: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(body)) + body


def test_wire_guard_refuses_before_decoding(shared_worker):
    c = shared_worker.client("app1")
    part = _ld(2, _ld(1, b"a"))
    header = _ld(1, key().encode())
    expect_error(lambda: c.raw_unary("CreateRun", header + part * 129,
                                     pb.rs.CreateRunResponse),
                 OK.INVALID_ARGUMENT, "INPUT_TOO_MANY_PARTS")
    expect_error(lambda: c.raw_unary("CreateRun", header + part + _ld(10, b"skill"),
                                     pb.rs.CreateRunResponse),
                 OK.INVALID_ARGUMENT, "SKILLS_NOT_SUPPORTED")
    # A garbage input part after the offending skill is never decoded.
    expect_error(lambda: c.raw_unary("CreateRun", header + _ld(10, b"s") + b"\xff\xff",
                                     pb.rs.CreateRunResponse),
                 OK.INVALID_ARGUMENT, "SKILLS_NOT_SUPPORTED")
    unpacked = b"".join(varint(1 << 3) + varint(5) for _ in range(10))
    packed = _ld(1, b"".join(varint(5) for _ in range(10)))
    mixed = _ld(1, b"".join(varint(5) for _ in range(5))) + unpacked[: 2 * 5]
    for payload in (unpacked, packed, mixed):
        expect_error(lambda p=payload: c.raw_unary("ListRuns", p, pb.rs.ListRunsResponse),
                     OK.INVALID_ARGUMENT, "STATUS_FILTER_TOO_LARGE")
    nine = _ld(1, b"".join(varint(v) for v in range(1, 10)))
    assert c.raw_unary("ListRuns", nine, pb.rs.ListRunsResponse) is not None


def test_request_size_limit(shared_worker):
    c = shared_worker.client("app1")
    payload = _ld(1, key().encode()) + _ld(2, _ld(1, b"x" * (2 * 1024 * 1024)))
    expect_error(lambda: c.raw_unary("CreateRun", payload, pb.rs.CreateRunResponse),
                 OK.RESOURCE_EXHAUSTED, "REQUEST_TOO_LARGE")


def test_cancel_is_idempotent_and_watch_ends(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), script("say started", "sleep forever")).run
    c.wait_status(run.run_id, S.RUN_STATUS_RUNNING)
    first = c.cancel(run.run_id)
    assert first.status in (S.RUN_STATUS_CANCELLING, S.RUN_STATUS_CANCELLED)
    final = c.wait_status(run.run_id, S.RUN_STATUS_CANCELLED)
    assert c.cancel(run.run_id).status == S.RUN_STATUS_CANCELLED
    events = c.watch(run.run_id)
    statuses = [e.status_changed.status for e in events if e.HasField("status_changed")]
    assert S.RUN_STATUS_CANCELLING in statuses
    assert events[-1].terminated.status == S.RUN_STATUS_CANCELLED
    assert final.result.output_text == "started"
    reader = shared_worker.client("reader")
    expect_error(lambda: reader.cancel(run.run_id), OK.PERMISSION_DENIED, "SCOPE_MISSING")


def test_dropping_a_watch_does_not_cancel(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), script("sleep 300", "say done")).run
    stream = c.runs.WatchRun(pb.rs.WatchRunRequest(run_id=run.run_id), metadata=c.md)
    next(stream)
    stream.cancel()
    assert c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED).result.output_text == "done"


def test_live_watch_sees_events_as_they_happen(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), script("say a", "sleep 200", "say b", "sleep 200", "say c")).run
    seen = [e.output_delta.text for e in c.watch(run.run_id) if e.HasField("output_delta")]
    assert seen == ["a", "b", "c"]


def _pending(c, run_id):
    run = c.wait_status(run_id, S.RUN_STATUS_WAITING_FOR_INPUT)
    return run.pending_interaction


def test_prompt_answer_rules(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), script("ask Which colour? | red | dark blue", "say ok")).run
    ix = _pending(c, run.run_id)
    assert list(ix.prompt.choices) == ["red", "dark blue"]
    respond = c.runs.RespondInteraction

    def answer(choice, interaction_id=ix.interaction_id, client=c):
        return client.runs.RespondInteraction(pb.rs.RespondInteractionRequest(
            run_id=run.run_id, interaction_id=interaction_id,
            prompt=pb.rs.PromptAnswer(choice=choice)), metadata=client.md)

    expect_error(lambda: answer("Red"), OK.INVALID_ARGUMENT, "INTERACTION_ANSWER_MISMATCH")
    expect_error(lambda: answer("red", "ix_999"), OK.NOT_FOUND, "INTERACTION_NOT_FOUND")
    expect_error(lambda: answer("red", client=shared_worker.client("reader")),
                 OK.PERMISSION_DENIED, "SCOPE_MISSING")
    expect_error(lambda: answer("red", client=shared_worker.client("app2")),
                 OK.NOT_FOUND, "RUN_NOT_FOUND")
    assert answer("dark blue").run.pending_interaction.interaction_id == ""
    expect_error(lambda: answer("red"), OK.FAILED_PRECONDITION, "INTERACTION_ALREADY_RESOLVED")
    final = c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    assert final.result.output_text == "ok"
    resolved = [e.interaction_resolved for e in c.watch(run.run_id)
                if e.HasField("interaction_resolved")]
    assert resolved[0].outcome == S.INTERACTION_OUTCOME_ANSWERED
    assert resolved[0].choice == "dark blue"
    assert respond is not None


def test_approval_shows_only_the_public_taxonomy(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), script("approve shell.run", "approve web.fetch https://example.com",
                                 "say end")).run
    ix = _pending(c, run.run_id)
    approval = ix.approval
    assert approval.action_class == S.ACTION_CLASS_EXECUTE
    assert approval.display_category == "shell commands"
    assert "shell" not in ix.SerializeToString().decode("latin-1").replace(
        "shell commands", "")

    def decide(interaction, binding, decision, client=c):
        return client.runs.RespondInteraction(pb.rs.RespondInteractionRequest(
            run_id=run.run_id, interaction_id=interaction.interaction_id,
            approval=pb.rs.ApprovalAnswer(binding=binding, decision=decision)),
            metadata=client.md)

    expect_error(lambda: decide(ix, "wrong", pb.rs.APPROVAL_DECISION_APPROVE),
                 OK.INVALID_ARGUMENT, "INTERACTION_ANSWER_MISMATCH")
    expect_error(lambda: decide(ix, approval.binding, pb.rs.APPROVAL_DECISION_APPROVE,
                                shared_worker.client("app1-prompts-only")),
                 OK.PERMISSION_DENIED, "SCOPE_MISSING")
    decide(ix, approval.binding, pb.rs.APPROVAL_DECISION_APPROVE)
    second = c.wait_status(run.run_id, S.RUN_STATUS_WAITING_FOR_INPUT).pending_interaction
    while second.interaction_id == ix.interaction_id:
        second = _pending(c, run.run_id)
    assert second.approval.origin == "https://example.com"
    assert second.approval.binding != approval.binding
    decide(second, second.approval.binding, pb.rs.APPROVAL_DECISION_DENY)
    c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    tools = [e.tool_activity for e in c.watch(run.run_id) if e.HasField("tool_activity")]
    assert [(t.action_class, t.phase) for t in tools] == [
        (S.ACTION_CLASS_EXECUTE, S.TOOL_ACTIVITY_PHASE_STARTED),
        (S.ACTION_CLASS_EXECUTE, S.TOOL_ACTIVITY_PHASE_COMPLETED),
        (S.ACTION_CLASS_NETWORK, S.TOOL_ACTIVITY_PHASE_FAILED),
    ]


def test_cancel_while_waiting_closes_the_interaction(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), script("ask Go? | yes | no")).run
    _pending(c, run.run_id)
    c.cancel(run.run_id)
    c.wait_status(run.run_id, S.RUN_STATUS_CANCELLED)
    kinds = [e.WhichOneof("payload") for e in c.watch(run.run_id)]
    assert kinds[-3:] == ["interaction_resolved", "status_changed", "terminated"]


def test_failure_tools_and_turn_budget(shared_worker):
    c = shared_worker.client("app1")
    failed = c.create(key(), script("say x", "fail quota_exceeded out of quota")).run
    final = c.wait_status(failed.run_id, S.RUN_STATUS_FAILED)
    assert final.result.failure.code == "quota_exceeded"
    assert final.result.failure.message == "out of quota"
    limited = c.create(key(), script("tool filesystem.read", "tool filesystem.read"),
                       max_turns=1).run
    assert c.wait_status(limited.run_id, S.RUN_STATUS_FAILED).result.failure.code == "turn_limit"
    ungranted = c.create(key(), script("tool schedule.create")).run
    c.wait_status(ungranted.run_id, S.RUN_STATUS_SUCCEEDED)
    tool = [e.tool_activity for e in c.watch(ungranted.run_id) if e.HasField("tool_activity")]
    assert [t.phase for t in tool] == [S.TOOL_ACTIVITY_PHASE_FAILED]
    assert tool[0].action_class == S.ACTION_CLASS_ADMINISTRATION


def test_plan_and_research_runs(shared_worker):
    c = shared_worker.client("app1")
    plan_run = c.create(key(), "Refactor the parser", mode=S.RUN_MODE_PLAN).run
    plan = c.wait_status(plan_run.run_id, S.RUN_STATUS_SUCCEEDED).result.plan
    assert plan.plan_id and plan.revision == 1 and plan.status == S.PLAN_STATUS_DRAFT

    def action(kind, revision, mode):
        return c.create(key(), "continue", mode=mode, plan_action=S.PlanAction(
            source_run_id=plan_run.run_id, revision=revision, kind=kind))

    expect_error(lambda: action(S.PLAN_ACTION_KIND_REVISE, 2, S.RUN_MODE_PLAN),
                 OK.FAILED_PRECONDITION, "PLAN_REVISION_STALE")
    expect_error(lambda: action(S.PLAN_ACTION_KIND_REVISE, 1, S.RUN_MODE_EXECUTE),
                 OK.INVALID_ARGUMENT, "FIELD_INVALID")
    revised = action(S.PLAN_ACTION_KIND_REVISE, 1, S.RUN_MODE_PLAN).run
    new_plan = c.wait_status(revised.run_id, S.RUN_STATUS_SUCCEEDED).result.plan
    assert (new_plan.plan_id, new_plan.revision) == (plan.plan_id, 2)
    expect_error(lambda: action(S.PLAN_ACTION_KIND_EXECUTE_DIRECT, 1, S.RUN_MODE_EXECUTE),
                 OK.FAILED_PRECONDITION, "PLAN_REVISION_STALE")
    expect_error(lambda: shared_worker.client("app2").create(
        key(), "x", plan_action=S.PlanAction(source_run_id=plan_run.run_id, revision=1,
                                             kind=S.PLAN_ACTION_KIND_EXECUTE_GOAL)),
        OK.NOT_FOUND, "RUN_NOT_FOUND")
    research = c.create(key(), "Why is the sky blue?", mode=S.RUN_MODE_RESEARCH,
                        research=S.ResearchOptions(depth=2, lanes=[
                            S.EVIDENCE_LANE_REPOSITORY, S.EVIDENCE_LANE_WEB])).run
    result = c.wait_status(research.run_id, S.RUN_STATUS_SUCCEEDED).result.research
    assert [ci.lane for ci in result.citations] == [S.EVIDENCE_LANE_REPOSITORY,
                                                     S.EVIDENCE_LANE_WEB]
    assert result.citations[1].url.startswith("https://")


def test_list_runs_pages_filters_and_tokens(make_worker):
    from conftest import ROOMY

    args = [a for item in ROOMY for a in ("--limit", item)]
    worker = make_worker(*args)
    c = worker.client("app1")
    ids = [c.create(f"k{i}", "x").run.run_id for i in range(7)]
    for run_id in ids:
        c.wait_status(run_id, S.RUN_STATUS_SUCCEEDED)

    def page(token="", statuses=(), size=0, client=c):
        return client.runs.ListRuns(pb.rs.ListRunsRequest(
            page_token=token, statuses=list(statuses), page_size=size), metadata=client.md)

    first = page()
    assert [r.run_id for r in first.runs] == ids[::-1][:3] and first.next_page_token
    c.create("later", "x")  # created after page one: must not shift the traversal
    second = page(first.next_page_token)
    third = page(second.next_page_token)
    listed = [r.run_id for p in (first, second, third) for r in p.runs]
    assert listed == ids[::-1] and not third.next_page_token
    assert len(page(size=2).runs) == 2
    assert page(statuses=[S.RUN_STATUS_FAILED]).runs == []
    expect_error(lambda: page(first.next_page_token, statuses=[S.RUN_STATUS_SUCCEEDED]),
                 OK.INVALID_ARGUMENT, "PAGE_TOKEN_INVALID")
    tampered = first.next_page_token[:-2] + ("A" if first.next_page_token[-2] != "A" else "B") \
        + first.next_page_token[-1]
    expect_error(lambda: page(tampered), OK.INVALID_ARGUMENT, "PAGE_TOKEN_INVALID")
    expect_error(lambda: page(first.next_page_token, client=worker.client("app2")),
                 OK.INVALID_ARGUMENT, "PAGE_TOKEN_INVALID")
    assert page(client=worker.client("app2")).runs == []


def test_list_runs_bounded_work_with_sparse_filter(make_worker):
    args = [a for item in ("create_rate_per_application_burst=200",
                           "create_rate_per_application_per_second=200",
                           "create_rate_burst=200", "create_rate_per_second=200",
                           "max_active_runs=200", "max_active_runs_per_application=200")
            for a in ("--limit", item)]
    worker = make_worker(*args)
    c = worker.client("app1")
    failed = c.create("f", script("fail boom")).run.run_id
    ok_ids = [c.create(f"k{i}", "x").run.run_id for i in range(70)]
    for run_id in [failed, *ok_ids]:
        c.wait_status(run_id, S.RUN_STATUS_SUCCEEDED, S.RUN_STATUS_FAILED)
    resp = c.runs.ListRuns(pb.rs.ListRunsRequest(statuses=[S.RUN_STATUS_FAILED]), metadata=c.md)
    assert resp.runs == [] and resp.next_page_token  # 64 entries examined, none matched
    resp = c.runs.ListRuns(pb.rs.ListRunsRequest(statuses=[S.RUN_STATUS_FAILED],
                                                 page_token=resp.next_page_token), metadata=c.md)
    assert [r.run_id for r in resp.runs] == [failed] and not resp.next_page_token


def test_unknown_status_value_is_refused(shared_worker):
    c = shared_worker.client("app1")
    payload = varint(1 << 3) + varint(42)
    expect_error(lambda: c.raw_unary("ListRuns", payload, pb.rs.ListRunsResponse),
                 OK.INVALID_ARGUMENT, "FIELD_INVALID")
    assert struct is not None and threading is not None


def test_unknown_enum_values_are_refused(shared_worker):
    c = shared_worker.client("app1")
    base = _ld(1, key().encode()) + _ld(2, _ld(1, b"a"))
    meta = expect_error(lambda: c.raw_unary("CreateRun", base + varint(3 << 3) + varint(7),
                                            pb.rs.CreateRunResponse),
                        OK.INVALID_ARGUMENT, "FIELD_INVALID")
    assert meta["field"] == "mode"


def _upload(worker, client, media_type, data):
    import hashlib

    from colossus_agent_client.api.v1alpha1 import artifacts_pb2, artifacts_pb2_grpc

    stub = artifacts_pb2_grpc.ArtifactServiceStub(client.channel)
    manifest = artifacts_pb2.ArtifactManifest(
        media_type=media_type, size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    messages = [artifacts_pb2.UploadArtifactRequest(manifest=manifest),
                artifacts_pb2.UploadArtifactRequest(chunk=data)]
    return stub.UploadArtifact(iter(messages), metadata=client.md).artifact.artifact_id


def test_artifact_input_parts(shared_worker):
    c = shared_worker.client("app1")
    text_id = _upload(shared_worker, c, "text/plain", b"notes")
    image_id = _upload(shared_worker, c, "image/png", b"\x89PNG....")

    def create(artifact_id, client=c):
        return client.runs.CreateRun(pb.rs.CreateRunRequest(
            idempotency_key=key(), input=[S.InputPart(text="read this"),
                                          S.InputPart(artifact=S.ArtifactReference(
                                              artifact_id=artifact_id))]), metadata=client.md)

    run = create(text_id).run
    assert c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED).result.output_text == "read this"
    expect_error(lambda: create(image_id), OK.INVALID_ARGUMENT, "ARTIFACT_NOT_ACCEPTED")
    expect_error(lambda: create(text_id, shared_worker.client("app2")), OK.NOT_FOUND,
                 "ARTIFACT_NOT_FOUND")
    expect_error(lambda: create("../etc/passwd"), OK.NOT_FOUND, "ARTIFACT_NOT_FOUND")


def test_cancelled_research_run_has_no_report(shared_worker):
    c = shared_worker.client("app1")
    run = c.create(key(), script("sleep forever", "research"), mode=S.RUN_MODE_RESEARCH,
                   research=S.ResearchOptions(depth=1, lanes=[S.EVIDENCE_LANE_MCP])).run
    c.wait_status(run.run_id, S.RUN_STATUS_RUNNING)
    c.cancel(run.run_id)
    final = c.wait_status(run.run_id, S.RUN_STATUS_CANCELLED)
    assert not final.result.HasField("research")
