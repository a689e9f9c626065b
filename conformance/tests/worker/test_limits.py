"""Admission limits (W11): watches, create buckets, active runs, connections."""

from __future__ import annotations

import socket
import ssl

import grpc
import pytest
from raw_h2 import RawClient

from conftest import ROOMY, error_info, expect_error, pb, retry_delay, script

S = pb.runs
OK = grpc.StatusCode
ROOMY_ARGS = [a for item in ROOMY for a in ("--limit", item)]


def _open_watch(client, run_id):
    stream = client.runs.WatchRun(pb.rs.WatchRunRequest(run_id=run_id), metadata=client.md)
    first = next(stream)  # the server has registered the watch once an event arrives
    assert first.event.sequence == 1
    return stream


def test_watch_limits_hold_without_deadlock(make_worker):
    apps = tuple(f"app{i}" for i in range(1, 10))
    worker = make_worker(*ROOMY_ARGS, apps=apps)
    clients = {app: worker.client(app) for app in apps}
    runs = {}
    for app, c in clients.items():
        runs[app] = c.create("hold", script("sleep forever")).run.run_id
        c.wait_status(runs[app], S.RUN_STATUS_RUNNING)
    streams = [_open_watch(clients[app], runs[app]) for app in apps[:8] for _ in range(8)]
    assert len(streams) == 64
    c1 = clients["app1"]
    meta = expect_error(lambda: next(c1.runs.WatchRun(
        pb.rs.WatchRunRequest(run_id=runs["app1"]), metadata=c1.md)),
        OK.RESOURCE_EXHAUSTED, "WATCH_LIMIT")
    assert meta["limit"] == "max_watches_per_application"
    c9 = clients["app9"]
    meta = expect_error(lambda: next(c9.runs.WatchRun(
        pb.rs.WatchRunRequest(run_id=runs["app9"]), metadata=c9.md)),
        OK.RESOURCE_EXHAUSTED, "WATCH_LIMIT")
    assert meta["limit"] == "max_watches"
    # Other calls still get through while every watch slot is taken.
    info = c1.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c1.md)
    assert info.server_info.limits.max_watches == 64
    for app in apps[:8]:
        clients[app].cancel(runs[app])
    for stream in streams:
        tail = [r.event for r in stream]
        assert tail[-1].terminated.status == S.RUN_STATUS_CANCELLED
    # Slots are released once the streams end.
    c9.cancel(runs["app9"])
    assert c9.watch(runs["app9"])[-1].HasField("terminated")


def test_create_buckets_per_application_and_global(make_worker):
    apps = tuple(f"app{i}" for i in range(1, 6))
    # The global bucket refills slowly (1 a second, burst 8), so its refusal comes whatever
    # the machine's load: with the default 4 a second, a loaded machine's creates took long
    # enough for the bucket to refill and none was refused.
    worker = make_worker("--limit", "max_active_runs=100",
                         "--limit", "max_active_runs_per_application=100",
                         "--limit", "create_rate_per_second=1", "--limit", "create_rate_burst=8",
                         apps=apps)
    c1 = worker.client("app1")
    for i in range(4):
        c1.create(f"k{i}")
    meta = expect_error(lambda: c1.create("k4"), OK.RESOURCE_EXHAUSTED, "CREATE_RATE_LIMIT")
    assert meta["limit"] == "create_rate_per_application"
    # The refusal says when a token is back (RetryInfo): at most one refill period (1 s).
    with pytest.raises(grpc.RpcError) as caught:
        c1.create("k4")
    delay = retry_delay(caught.value)
    assert delay is not None and 0 < delay <= 1.0
    assert c1.create("k0").replayed  # replays are free
    refused = None
    for app in apps[1:]:
        c = worker.client(app)
        for i in range(4):
            try:
                c.create(f"{app}-{i}")
            except grpc.RpcError as err:
                refused = error_info(err)
                break
        if refused:
            break
    assert refused is not None
    assert refused[:2] == (OK.RESOURCE_EXHAUSTED, "CREATE_RATE_LIMIT")
    assert refused[2]["limit"] == "create_rate"


def test_active_run_limits(make_worker):
    worker = make_worker("--limit", "max_active_runs=3",
                         "--limit", "max_active_runs_per_application=2")
    c1, c2 = worker.client("app1"), worker.client("app2")
    a = c1.create("a", script("sleep forever")).run.run_id
    c1.create("b", script("sleep forever"))
    meta = expect_error(lambda: c1.create("c"), OK.RESOURCE_EXHAUSTED, "ACTIVE_RUN_LIMIT")
    assert meta["limit"] == "max_active_runs_per_application"
    c2.create("a", script("sleep forever"))
    meta = expect_error(lambda: c2.create("b"), OK.RESOURCE_EXHAUSTED, "ACTIVE_RUN_LIMIT")
    assert meta["limit"] == "max_active_runs"
    c1.cancel(a)
    c1.wait_status(a, S.RUN_STATUS_CANCELLED)
    assert c2.create("b", "x").run.run_id


def test_connection_limit(make_worker):
    """Connections in use (an open stream each) fill the cap; the next one is refused."""
    worker = make_worker("--limit", "max_connections=2")
    host, port = worker.target.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=worker.pem.decode())
    ctx.set_alpn_protocols(["h2"])
    held = [RawClient(worker.target, worker.pem, worker.bearers["app1"]) for _ in range(2)]
    for client in held:
        client.open("/colossus.api.v1alpha1.RunService/GetRun")  # no body: it stays open
        client.round_trip()
    raw = socket.create_connection((host, int(port)), timeout=5)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        tls = ctx.wrap_socket(raw, server_hostname=host)
        tls.recv(1)  # a refused connection is closed right away
        raise ConnectionError("closed")
    for client in held:
        client.close()


def test_header_block_limit(make_worker):
    worker = make_worker()
    c = worker.client("app1")
    request = pb.sys.GetServerInfoRequest()
    # Over 16 KiB as HTTP/2 counts a header list (32 bytes a field on top), in a block of
    # half that: the call is refused and the connection carries on.
    padding = [(f"x-p{i}", "y" * 20) for i in range(300)]
    meta = expect_error(lambda: c.system.GetServerInfo(
        request, metadata=[*c.md, *padding], timeout=10),
        OK.RESOURCE_EXHAUSTED, "REQUEST_TOO_LARGE")
    assert meta["limit"] == "max_header_bytes"
    assert c.system.GetServerInfo(request, metadata=c.md, timeout=10).server_info
    # A block that is itself over 16 KiB (grpcio does not compress the value) closes the
    # connection as soon as it crosses the bound; the next call reconnects.
    with pytest.raises(grpc.RpcError) as caught:
        c.system.GetServerInfo(request, metadata=[*c.md, ("x-padding", "y" * 17000)], timeout=10)
    assert caught.value.code() == OK.UNAVAILABLE
    assert c.system.GetServerInfo(request, metadata=c.md, timeout=10).server_info


def test_old_connections_are_retired_without_failing_calls(make_worker):
    worker = make_worker("--limit", "max_connection_age_seconds=1", "--log-level", "DEBUG")
    c = worker.client("app1")
    request = pb.sys.GetServerInfoRequest()
    import time

    deadline = time.monotonic() + 3.5
    while time.monotonic() < deadline:  # spans at least two connection lifetimes
        assert c.system.GetServerInfo(request, metadata=c.md, timeout=10).server_info
        time.sleep(0.1)
    log = worker.log_path.read_text()
    assert log.count("reached its maximum age") >= 1
    assert log.count("accepted") >= 2
