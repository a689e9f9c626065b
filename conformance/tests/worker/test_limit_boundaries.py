"""Default limits hold exactly at their boundary: N is served, N+1 is refused (W11).

Creation is paced by the default token buckets, so the tests retry a refused
create only when the refusal is the rate limit, never on a deadline of their own.
"""

from __future__ import annotations

import time
import uuid

import grpc
from raw_h2 import RawClient, frame

from colossus_reference_worker.wire.protowire import varint

from conftest import error_info, expect_error, pb, script

S = pb.runs
OK = grpc.StatusCode
MIB = 1 << 20


def _create_paced(client, text: str):
    """Create one run, waiting out the create buckets (and only them)."""
    key = uuid.uuid4().hex
    while True:
        try:
            return client.create(key, text).run
        except grpc.RpcError as err:
            if error_info(err)[1] != "CREATE_RATE_LIMIT":
                raise
            time.sleep(0.25)


def _refusal(client) -> dict[str, str]:
    """The ACTIVE_RUN_LIMIT refusal of one more create (waiting out the buckets first)."""
    while True:
        try:
            client.create(uuid.uuid4().hex, script("sleep forever"))
        except grpc.RpcError as err:
            code, reason, metadata = error_info(err)
            if reason == "CREATE_RATE_LIMIT":
                time.sleep(0.25)
                continue
            assert (code, reason) == (OK.RESOURCE_EXHAUSTED, "ACTIVE_RUN_LIMIT")
            return metadata
        raise AssertionError("a run over the active-run limit was accepted")


def test_default_active_run_limits_are_exact(make_worker):
    apps = tuple(f"app{i}" for i in range(1, 6))
    worker = make_worker(apps=apps)
    clients = [worker.client(app) for app in apps]
    held = {app: [] for app in apps}
    for app, client in zip(apps[:4], clients[:4], strict=True):
        for _ in range(8):  # the eighth run of an application is still accepted
            held[app].append(_create_paced(client, script("sleep forever")).run_id)
        assert _refusal(client)["limit"] == "max_active_runs_per_application"
    # 32 active runs in all: a fifth application, under its own limit, is refused.
    assert _refusal(clients[4])["limit"] == "max_active_runs"
    # Ending one run frees exactly one slot.
    clients[0].cancel(held["app1"][0])
    clients[0].wait_status(held["app1"][0], S.RUN_STATUS_CANCELLED)
    held["app5"].append(_create_paced(clients[4], script("sleep forever")).run_id)
    assert _refusal(clients[4])["limit"] == "max_active_runs"
    for app, client in zip(apps, clients, strict=True):
        for run_id in held[app]:
            client.cancel(run_id)


def _padded_get_run(total: int) -> bytes:
    """A GetRun message of exactly ``total`` bytes: a run ID and one unknown field."""
    head = b"\x0a\x08run_none"
    for pad_len in range(total - len(head), 0, -1):
        pad = varint(15 << 3 | 2) + varint(pad_len) + b"p" * pad_len
        if len(head) + len(pad) == total:
            return head + pad
    raise AssertionError(total)


def test_request_size_is_exact_at_the_length_prefix(make_worker):
    worker = make_worker()
    raw = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        at_limit = raw.call("/colossus.api.v1alpha1.RunService/GetRun",
                            frame(_padded_get_run(2 * MIB)))
        assert at_limit.grpc_status == 5 and at_limit.error_info()[0] == "RUN_NOT_FOUND"
        over = raw.call("/colossus.api.v1alpha1.RunService/GetRun",
                        frame(_padded_get_run(2 * MIB + 1)))
        assert over.grpc_status == 8
        assert over.error_info() == ("REQUEST_TOO_LARGE", {"limit": "max_request_bytes"})
    finally:
        raw.close()
    c = worker.client("app1")
    expect_error(lambda: c.get("run_none"), OK.NOT_FOUND, "RUN_NOT_FOUND")


def _create_parts(client, *texts: str, **fields):
    return client.runs.CreateRun(pb.rs.CreateRunRequest(
        idempotency_key=uuid.uuid4().hex, input=[S.InputPart(text=t) for t in texts], **fields),
        metadata=client.md)


def test_input_size_and_turns_are_exact(shared_worker):
    c = shared_worker.client("app1")
    half = "x" * (MIB // 2)
    assert _create_parts(c, "x" * MIB).run.run_id          # 1 MiB in one part
    assert _create_parts(c, half, half).run.run_id         # and summed over parts
    meta = expect_error(lambda: _create_parts(c, half, half + "x"), OK.INVALID_ARGUMENT,
                        "INPUT_TOO_LARGE")
    assert meta == {"field": "input", "limit": "max_input_bytes"}
    # Bytes of UTF-8, not characters: 2-byte characters reach the limit at half the count.
    assert _create_parts(c, "é" * (MIB // 2)).run.run_id
    expect_error(lambda: _create_parts(c, "é" * (MIB // 2) + "x"), OK.INVALID_ARGUMENT,
                 "INPUT_TOO_LARGE")
    assert _create_parts(c, "x", max_turns=100).run.max_turns == 100
    expect_error(lambda: _create_parts(c, "x", max_turns=101), OK.INVALID_ARGUMENT,
                 "MAX_TURNS_OUT_OF_RANGE")
    assert _create_parts(c, *["p"] * 128).run.run_id
    expect_error(lambda: _create_parts(c, *["p"] * 129), OK.INVALID_ARGUMENT,
                 "INPUT_TOO_MANY_PARTS")
