"""Bounded fuzzing of raw request bytes, per RPC (issue 11, item 6).

Run by the ``worker_fuzz`` session (not collected with the ordinary tests: the
file name does not start with ``test_``). For every RPC, hypothesis sends random
bytes, mutations of a valid request and soups of arbitrary fields; no answer may
be INTERNAL or UNKNOWN, every failure carries one ErrorInfo, and a refused
request never writes to the journal. ``max_examples`` bounds the work, and the
per-example deadline turns a hang into a failure.
"""

from __future__ import annotations

import datetime
import sqlite3
import time

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colossus_reference_worker.wire.protowire import varint

from conftest import ROOMY, error_info, pb

EXAMPLES = 150
FORBIDDEN = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
TERMINAL = {pb.runs.RUN_STATUS_SUCCEEDED, pb.runs.RUN_STATUS_FAILED, pb.runs.RUN_STATUS_CANCELLED}

VALID = {
    "RunService/CreateRun": pb.rs.CreateRunRequest(
        idempotency_key="fuzz", input=[pb.runs.InputPart(text="hi")], max_turns=3),
    "RunService/GetRun": pb.rs.GetRunRequest(run_id="run_abc"),
    "RunService/ListRuns": pb.rs.ListRunsRequest(statuses=[1, 2], page_size=2),
    "RunService/WatchRun": pb.rs.WatchRunRequest(run_id="run_abc", after_sequence=3),
    "RunService/CancelRun": pb.rs.CancelRunRequest(run_id="run_abc"),
    "RunService/RespondInteraction": pb.rs.RespondInteractionRequest(
        run_id="run_abc", interaction_id="ix_3", prompt=pb.rs.PromptAnswer(choice="red")),
    "SystemService/GetServerInfo": pb.sys.GetServerInfoRequest(),
}


@st.composite
def _field_soup(draw: st.DrawFn) -> bytes:
    out = b""
    for _ in range(draw(st.integers(0, 12))):
        number, wire = draw(st.integers(1, 20)), draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7]))
        out += varint(number << 3 | wire)
        if wire == 0:
            out += varint(draw(st.integers(0, 2**64 - 1)))
        elif wire in (1, 5):
            out += draw(st.binary(min_size=8 if wire == 1 else 4, max_size=8 if wire == 1 else 4))
        elif wire == 2:
            body = draw(st.one_of(st.binary(max_size=40), st.text(max_size=20).map(str.encode)))
            out += varint(max(0, len(body) + draw(st.sampled_from([0, 0, 0, 1, -1])))) + body
    return out


@st.composite
def _mutated(draw: st.DrawFn, valid: bytes) -> bytes:
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            data.extend(draw(st.binary(min_size=1, max_size=4)))
            continue
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if action == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif action == "delete":
            del data[at]
        else:
            del data[at:]
    return bytes(data)


def _requests(method: str) -> st.SearchStrategy[bytes]:
    valid = VALID[method].SerializeToString()
    return st.one_of(st.binary(max_size=200), _mutated(valid), _field_soup(),
                     _field_soup().map(lambda soup: valid + soup))


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory):
    from conftest import Worker

    root = tmp_path_factory.mktemp("fuzz")
    root.chmod(0o700)
    worker = Worker(root, tuple(a for item in ROOMY for a in ("--limit", item)))
    worker.public.mkdir(mode=0o700)
    worker.enroll("app1")
    worker.start()
    yield worker, worker.client("app1")
    worker.stop()


def _records(worker) -> int:
    db = sqlite3.connect(f"file:{worker.state / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    finally:
        db.close()


def _settle(client, reply: bytes) -> None:
    """A fuzzed CreateRun that happened to be valid: let its run finish first."""
    run_id = pb.rs.CreateRunResponse.FromString(reply).run.run_id
    deadline = time.monotonic() + 20
    while client.get(run_id).status not in TERMINAL:
        if time.monotonic() > deadline:
            client.cancel(run_id)
            deadline = time.monotonic() + 20
        time.sleep(0.05)


def _call(client, method: str, payload: bytes) -> bytes | None:
    path = f"/colossus.api.v1alpha1.{method}"
    if method.endswith("WatchRun"):
        call = client.channel.unary_stream(path, request_serializer=None,
                                           response_deserializer=None)
        return b"".join(call(payload, metadata=client.md, timeout=20))
    call = client.channel.unary_unary(path, request_serializer=None, response_deserializer=None)
    return call(payload, metadata=client.md, timeout=20)


@pytest.mark.parametrize("method", sorted(VALID))
def test_fuzzed_requests_never_fail_internally(fuzz_target, method):
    worker, client = fuzz_target

    @settings(max_examples=EXAMPLES, deadline=datetime.timedelta(seconds=15), database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(payload=_requests(method))
    def check(payload: bytes) -> None:
        before = _records(worker)
        try:
            reply = _call(client, method, payload)
        except grpc.RpcError as err:
            assert err.code() not in FORBIDDEN, (err.code(), err.details())
            error_info(err)  # exactly one ErrorInfo in the worker's domain
            assert _records(worker) == before, "a refused request wrote to the journal"
            return
        if method.endswith("CreateRun") and reply is not None:
            _settle(client, reply)

    check()
