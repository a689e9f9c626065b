"""Issue 11 (4, 5): the connection cap holds after failed handshakes, and excess
HTTP/2 streams are refused one by one instead of dropping the connection."""

from __future__ import annotations

import socket
import ssl

from raw_h2 import RawClient, frame
from test_hostile_input import RUNS, SYSTEM

REFUSED_STREAM = 0x7


def _failed_handshake(host: str, port: int) -> None:
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # not a TLS ClientHello
        while sock.recv(4096):  # the worker closes the connection
            pass


def _held_connections(worker, at_most: int) -> list[RawClient]:
    """Open connections in use until one is refused (or ``at_most`` are held).

    Each opens a stream and keeps it open: the worker closes a connection that opens no
    stream within a few seconds, and at the cap it closes one without an open stream to
    make room, either of which would free a place while the rest are still being opened.
    """
    held: list[RawClient] = []
    for _ in range(at_most):
        try:
            client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
        except (ssl.SSLError, OSError):
            break
        held.append(client)
        client.open(RUNS + "GetRun")  # no body: it stays open
        client.round_trip()  # seen by the worker before the next connection arrives
    return held


def test_failed_handshakes_leave_the_cap_exact(make_worker):
    worker = make_worker()
    host, port = worker.target.rsplit(":", 1)
    for _ in range(200):
        _failed_handshake(host, int(port))
    held = _held_connections(worker, 128 + 40)
    try:
        print(f"\nconnection cap after 200 failed handshakes: {len(held)} (limit 128)")
        assert len(held) == 128
    finally:
        for client in held:
            client.close()
    log = worker.log_path.read_text()
    assert "Traceback" not in log and "UnboundLocalError" not in log


def test_excess_streams_are_refused_and_the_connection_survives(make_worker):
    worker = make_worker()
    raw = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        limit = raw.server_max_streams
        assert limit == 128
        held = [raw.open(RUNS + "GetRun") for _ in range(limit)]  # no body: they stay open
        extra = [raw.open(RUNS + "GetRun", ignore_limit=True) for _ in range(2)]
        raw.round_trip()
        for stream_id in extra:
            assert raw.wait(stream_id).reset_code == REFUSED_STREAM
        assert not raw.goaway
        assert not any(raw.outcomes[s].done for s in held)
        # A freed place is usable again on the same connection (by another application,
        # since app1's own decode permits are taken by its waiting streams).
        raw.reset(held[0])
        raw.round_trip()
        again = raw.open(SYSTEM, bearer=worker.bearers["app2"])
        raw.send(again, frame(b""))
        assert raw.wait(again).grpc_status == 0
        assert not raw.goaway
    finally:
        raw.close()
