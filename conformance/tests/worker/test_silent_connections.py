"""A connection that finishes TLS but never speaks HTTP/2 gives its slot back (W11).

Without this, peers that complete the handshake and then say nothing would
hold connection slots until the connection's maximum age (15 minutes) and lock
every other client out. The worker allows the handshake timeout for the HTTP/2
preface and the first stream (test_http2_rules.py has the connection that sends
the preface and no stream); a client that opened a stream may then stay idle as
long as it likes.
"""

from __future__ import annotations

import socket
import ssl
import time

from raw_h2 import RawClient

from conftest import pb

ARGS = ("--limit", "max_connections=2", "--limit", "handshake_timeout=1")
SERVER_INFO = "/colossus.api.v1alpha1.SystemService/GetServerInfo"


def _tls(worker) -> ssl.SSLSocket:
    host, port = worker.target.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=worker.pem.decode())
    ctx.set_alpn_protocols(["h2"])
    sock = socket.create_connection((host, int(port)), timeout=30)
    return ctx.wrap_socket(sock, server_hostname=host)


def _closed_by_worker(sock: ssl.SSLSocket) -> bool:
    """Read (the worker's own SETTINGS first) until it closes the connection.

    False when 30 s pass without the close.
    """
    try:
        while sock.recv(4096):
            pass
    except (ssl.SSLError, ConnectionError):
        return True
    except TimeoutError:
        return False
    return True


def test_silent_tls_connections_are_closed_and_free_their_slots(make_worker):
    worker = make_worker(*ARGS)
    silent = [_tls(worker) for _ in range(2)]  # every slot taken, not a byte of HTTP/2
    try:
        assert all(_closed_by_worker(sock) for sock in silent)
    finally:
        for sock in silent:
            sock.close()
    c = worker.client("app1")
    assert c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md,
                                  timeout=30).server_info
    assert worker.log_path.read_text().count("no HTTP/2 preface") == 2


def test_a_connection_that_opened_a_stream_may_idle(make_worker):
    worker = make_worker(*ARGS)
    client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        assert client.call(SERVER_INFO, b"\x00\x00\x00\x00\x00").grpc_status == 0
        time.sleep(2.5)  # well past the allowance for the first stream, idle all along
        outcome = client.call(SERVER_INFO, b"\x00\x00\x00\x00\x00")
        assert outcome.grpc_status == 0 and not client.goaway
    finally:
        client.close()
    log = worker.log_path.read_text()
    assert "no HTTP/2 preface" not in log and "no stream within" not in log
