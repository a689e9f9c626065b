"""HTTP/2 abuse on one connection never takes the worker down (W11, hardening).

Each row attacks the worker over a bare HTTP/2 connection, then an ordinary
client on another connection must still be served, and the worker process must
still be running. The answers the attacker itself gets are asserted too where
HTTP/2 or gRPC fixes them.
"""

from __future__ import annotations

import socket
import ssl

import pytest
from hyperframe.frame import SettingsFrame, WindowUpdateFrame
from raw_h2 import Outcome, RawClient, frame

from conftest import pb

RUNS = "/colossus.api.v1alpha1.RunService/"
GRPC_UNKNOWN = 2


def _served(worker) -> None:
    assert worker.proc is not None and worker.proc.poll() is None
    c = worker.client("app1")
    info = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md, timeout=30)
    assert info.server_info.api_package == "colossus.api.v1alpha1"


def _request(client: RawClient, headers: list[tuple[str, str]], body: bytes) -> Outcome:
    stream_id = client.conn.get_next_available_stream_id()
    client.outcomes[stream_id] = Outcome()
    client.conn.send_headers(stream_id, headers)
    client.send(stream_id, body)
    return client.wait(stream_id)


def _headers(client: RawClient, method: str = "POST", content_type: str = "application/grpc"):
    return [(":method", method), (":scheme", "https"), (":path", RUNS + "GetRun"),
            (":authority", client.authority), ("content-type", content_type),
            ("te", "trailers"), ("authorization", f"Bearer {client.bearer}")]


def rapid_reset(client: RawClient) -> None:
    """Streams opened and reset at once, far past the stream limit (CVE-2023-44487)."""
    for _ in range(2000):
        client.reset(client.open(RUNS + "GetRun", ignore_limit=True))
    client.round_trip()


def ping_flood(client: RawClient) -> None:
    for i in range(10_000):
        client.conn.ping(i.to_bytes(8, "big"))
    client._flush()
    client.round_trip()


def settings_flood(client: RawClient) -> None:
    body = b"".join(SettingsFrame(0, settings={4: 65_535 + i}).serialize() for i in range(3000))
    client.sock.sendall(body)
    client.round_trip()


def window_overflow(client: RawClient) -> None:
    """A connection window pushed past 2^31-1 is a connection error: GOAWAY for it alone."""
    update = WindowUpdateFrame(0, window_increment=2**31 - 1).serialize()
    client.sock.sendall(update * 2)
    client.pump(lambda: client.goaway, timeout=30)
    assert client.goaway


def header_block_over_h2_ceiling(client: RawClient) -> None:
    """A header block far over 64 KiB closes this connection only."""
    stream_id = client.conn.get_next_available_stream_id()
    client.conn.send_headers(stream_id, [*_headers(client),
                                         *((f"x-h{i}", "v" * 4000) for i in range(200))])
    try:
        client._flush()
        client.pump(lambda: client.goaway, timeout=30)
    except (ssl.SSLError, OSError):
        return  # closed while we were still sending: as good as a GOAWAY


def wrong_content_type(client: RawClient) -> None:
    for content_type in ("text/plain", "application/grpc+json"):
        outcome = _request(client, _headers(client, content_type=content_type),
                           frame(b"\x0a\x05run_a"))
        assert outcome.headers[":status"] == "415"
        assert outcome.grpc_status == GRPC_UNKNOWN


def not_a_grpc_request(client: RawClient) -> None:
    outcome = _request(client, _headers(client, method="GET"), b"")
    assert outcome.headers[":status"] == "405"


ATTACKS = [rapid_reset, ping_flood, settings_flood, window_overflow,
           header_block_over_h2_ceiling, wrong_content_type, not_a_grpc_request]


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.__name__ for a in ATTACKS])
def test_the_worker_outlives_the_attack(make_worker, attack):
    worker = make_worker()
    client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        attack(client)
    finally:
        client.close()
    _served(worker)


def test_silent_tcp_connections_do_not_block_tls_clients(make_worker):
    worker = make_worker()
    host, port = worker.target.rsplit(":", 1)
    silent = [socket.create_connection((host, int(port)), timeout=10) for _ in range(32)]
    try:
        _served(worker)
    finally:
        for sock in silent:
            sock.close()
