"""Idempotent creation under concurrency, field by field (W6)."""

from __future__ import annotations

import threading
import uuid

import grpc

from conftest import expect_error, pb

S = pb.runs
OK = grpc.StatusCode


def test_simultaneous_creates_with_one_key_make_one_run(shared_worker):
    c = shared_worker.client("app1")
    key = uuid.uuid4().hex
    gate = threading.Barrier(12)
    replies = []

    def create():
        gate.wait()
        replies.append(c.create(key, "same"))

    threads = [threading.Thread(target=create) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(replies) == 12
    assert len({r.run.run_id for r in replies}) == 1
    assert sum(not r.replayed for r in replies) == 1
    listed = c.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=c.md).runs
    assert [r.run_id for r in listed].count(replies[0].run.run_id) == 1


def _request(key, parts=("a", "b"), **fields):
    return pb.rs.CreateRunRequest(idempotency_key=key,
                                  input=[S.InputPart(text=t) for t in parts], **fields)


def test_every_field_is_in_the_fingerprint_except_the_trace_context(shared_worker):
    c = shared_worker.client("app1")
    key = uuid.uuid4().hex
    first = c.runs.CreateRun(_request(key), metadata=c.md)
    changed = [
        _request(key, parts=("b", "a")),             # part order
        _request(key, parts=("a", "b", "")),         # one more (empty) part
        _request(key, parts=("ab",)),                # same text, other parts
        _request(key, end_user_id="user-1"),
        _request(key, max_turns=5),
        _request(key, session_id="ses_fixed"),
        _request(key, role="reviewer"),
        _request(key, mode=S.RUN_MODE_PLAN),
    ]
    for request in changed:
        expect_error(lambda r=request: c.runs.CreateRun(r, metadata=c.md),
                     OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    traced = _request(key, trace_context=S.TraceContext(
        traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        tracestate="vendor=1"))
    again = c.runs.CreateRun(traced, metadata=c.md)
    assert again.replayed and again.run.run_id == first.run.run_id
