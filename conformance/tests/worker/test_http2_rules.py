"""HTTP/2 as RFC 9113 has it, and connections that hold a place without using it (W1, W11).

The suite h2spec checks the frame-level rules (`./noxw -s h2spec`); these tests pin
what the worker adds of its own and what a client of the worker relies on:

- a connection that did not negotiate ALPN ``h2`` is closed once TLS is up;
- one header block is bounded at the advertised 16 KiB header limit, however many
  CONTINUATION frames carry it, and an oversized ``authorization`` is refused at once;
- a connection that opens no stream within the handshake timeout is closed, and at the
  connection cap the oldest connection without an open stream makes room for a new one;
- a malformed request (a body that contradicts its content-length included) is reset
  with PROTOCOL_ERROR before any handler runs, and the connection carries on; frames of
  unknown types are ignored; a request that is not POST gets 405 with a text body.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from raw_h2 import Outcome, RawClient, frame

from conftest import pb

SYSTEM = "/colossus.api.v1alpha1.SystemService/GetServerInfo"
RUNS = "/colossus.api.v1alpha1.RunService/"
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
HEADERS, CONTINUATION, GOAWAY = 0x1, 0x9, 0x7
END_HEADERS = 0x4
NO_ERROR, PROTOCOL_ERROR, ENHANCE_YOUR_CALM = 0x0, 0x1, 0xB
HEADER_LIMIT = 16 * 1024


def _tls(worker, alpn: tuple[str, ...] = ("h2",)) -> ssl.SSLSocket:
    host, port = worker.target.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=worker.pem.decode())
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    sock = socket.create_connection((host, int(port)), timeout=10)
    return ctx.wrap_socket(sock, server_hostname=host)


def _raw_frame(kind: int, flags: int, stream_id: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream_id) + payload


def _read_until_closed(sock: ssl.SSLSocket, timeout: float) -> tuple[bool, list[tuple[int, bytes]]]:
    """Read frames until the worker closes the connection or ``timeout`` passes.

    Returns (closed, [(frame type, payload), ...]).
    """
    deadline = time.monotonic() + timeout
    data = b""
    closed = False
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except (ssl.SSLError, ConnectionError):
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    frames = []
    while len(data) >= 9:
        length = int.from_bytes(data[:3], "big")
        frames.append((data[3], data[9:9 + length]))
        data = data[9 + length:]
    return closed, frames


def _goaway_code(frames: list[tuple[int, bytes]]) -> int | None:
    codes = [int.from_bytes(payload[4:8], "big") for kind, payload in frames if kind == GOAWAY]
    return codes[-1] if codes else None


def _served(worker) -> None:
    c = worker.client("app1")
    info = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md, timeout=30)
    assert info.server_info.api_package == "colossus.api.v1alpha1"


@pytest.mark.parametrize("alpn", [(), ("http/1.1",)], ids=["no-alpn", "http1-only"])
def test_a_connection_without_alpn_h2_is_closed_after_the_handshake(make_worker, alpn):
    worker = make_worker()
    sock = _tls(worker, alpn)
    try:
        assert sock.version() == "TLSv1.3" and sock.selected_alpn_protocol() is None
        sock.sendall(H2_PREFACE)  # even a client that then speaks HTTP/2 is not served
        closed, frames = _read_until_closed(sock, 10)
        assert closed and frames == []
    finally:
        sock.close()
    assert "did not negotiate HTTP/2 (ALPN h2)" in worker.log_path.read_text()
    _served(worker)


def test_one_header_block_is_bounded_across_continuation_frames(make_worker):
    worker = make_worker()
    sock = _tls(worker)
    try:
        sock.sendall(H2_PREFACE)
        # Exactly the limit, in a HEADERS frame and three CONTINUATION frames, never ended.
        quarter = b"\x00" * (HEADER_LIMIT // 4)
        sock.sendall(_raw_frame(HEADERS, 0, 1, quarter)
                     + b"".join(_raw_frame(CONTINUATION, 0, 1, quarter) for _ in range(3)))
        closed, _ = _read_until_closed(sock, 1.0)
        assert not closed, "a block of exactly the limit was refused"
        sock.sendall(_raw_frame(CONTINUATION, 0, 1, b"\x00"))  # one byte over
        closed, frames = _read_until_closed(sock, 5)
        assert closed and _goaway_code(frames) == ENHANCE_YOUR_CALM
    finally:
        sock.close()
    _served(worker)


def test_an_oversized_authorization_header_is_refused_within_a_second(make_worker):
    """grpcio sends the 300 KiB header in CONTINUATION frames; the worker stops reading it
    once the block passes 16 KiB, so the call fails at once instead of at its deadline."""
    worker = make_worker()
    c = worker.client("app1")
    request = pb.sys.GetServerInfoRequest()
    assert c.system.GetServerInfo(request, metadata=c.md, timeout=30).server_info  # connected
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as caught:
        c.system.GetServerInfo(request, timeout=10, metadata=[
            ("authorization", "Bearer " + "a" * (300 * 1024))])
    elapsed = time.monotonic() - started
    print(f"\n300 KiB authorization refused after {elapsed * 1000:.0f} ms: {caught.value.code()}")
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE and elapsed < 1.0
    _served(worker)


def test_a_connection_that_opens_no_stream_is_closed(make_worker):
    worker = make_worker("--limit", "handshake_timeout=1")
    sock = _tls(worker)
    try:
        sock.sendall(H2_PREFACE)  # HTTP/2 spoken, then nothing
        started = time.monotonic()
        closed, frames = _read_until_closed(sock, 10)
        assert closed and _goaway_code(frames) == NO_ERROR
        assert time.monotonic() - started < 5
    finally:
        sock.close()
    assert "closed connection 1: no stream within 1 s" in worker.log_path.read_text()


def test_idle_connections_at_the_cap_make_room_for_a_client(make_worker):
    """Issue 28's figure: 128 connections hold every place, having sent the HTTP/2 preface
    and SETTINGS and nothing more; a client still connects and is answered within 2 s."""
    # A long handshake timeout: only the eviction at the cap can let the client in.
    worker = make_worker("--limit", "handshake_timeout=120")
    with ThreadPoolExecutor(8) as pool:
        idle = list(pool.map(lambda _: _tls(worker), range(128)))
    try:
        for sock in idle:
            sock.sendall(H2_PREFACE)
        started = time.monotonic()
        c = worker.client("app1")
        info = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md, timeout=2)
        elapsed = time.monotonic() - started
        print(f"\nconnect and GetServerInfo with 128 idle connections held: {elapsed * 1000:.0f} ms")
        assert info.server_info.api_package == "colossus.api.v1alpha1" and elapsed < 2
    finally:
        for sock in idle:
            sock.close()
    log = worker.log_path.read_text()
    assert "the oldest without an open stream, to admit connection 129" in log
    assert "refused connection" not in log


def test_at_the_cap_connections_with_open_streams_are_kept(make_worker):
    worker = make_worker("--limit", "max_connections=2", "--limit", "handshake_timeout=1")
    busy = [RawClient(worker.target, worker.pem, worker.bearers["app1"]) for _ in range(2)]
    try:
        held = [client.open(RUNS + "GetRun") for client in busy]  # no body: they stay open
        for client in busy:
            client.round_trip()  # the worker has seen the stream
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            sock = _tls(worker)
            sock.recv(1)  # a refused connection is closed right away
            raise ConnectionError("closed")
        time.sleep(1.5)  # past the first-stream allowance: a connection in use stays
        for client, stream_id in zip(busy, held, strict=True):
            client.send(stream_id, frame(b"\x0a\x05run_x"))
            assert client.wait(stream_id).grpc_status is not None and not client.goaway
    finally:
        for client in busy:
            client.close()
    assert "refused connection 3: max_connections (2) reached" in worker.log_path.read_text()


MALFORMED = {
    "upper-case name": [("X-Upper", "1")],
    "unknown pseudo-header": [(":colour", "blue")],
    "response pseudo-header": [(":status", "200")],
    "connection-specific field": [("connection", "keep-alive")],
    "te other than trailers": [("te", "trailers, deflate")],
    "value with trailing space": [("x-note", "a ")],
}


def _lenient(client: RawClient) -> RawClient:
    """Let the client's h2 send what HTTP/2 forbids."""
    client.conn.config.validate_outbound_headers = False
    client.conn.config.normalize_outbound_headers = False
    return client


def _request(client: RawClient, headers: list[tuple[str, str]], body: bytes) -> int:
    stream_id = client.conn.get_next_available_stream_id()
    client.outcomes[stream_id] = Outcome()
    client.conn.send_headers(stream_id, headers, end_stream=not body)
    if body:
        client.send(stream_id, body)
    client._flush()
    return stream_id


def _create_headers(client: RawClient) -> list[tuple[str, str]]:
    return [(":method", "POST"), (":scheme", "https"), (":path", RUNS + "CreateRun"),
            (":authority", client.authority), ("content-type", "application/grpc"),
            ("te", "trailers"), ("authorization", f"Bearer {client.bearer}")]


@pytest.mark.parametrize("extra", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_request_is_reset_before_any_handler(make_worker, extra):
    worker = make_worker()
    client = _lenient(RawClient(worker.target, worker.pem, worker.bearers["app1"]))
    try:
        create = pb.rs.CreateRunRequest(idempotency_key="k1",
                                        input=[pb.runs.InputPart(text="hello")])
        headers = _create_headers(client)
        # A pseudo-header goes where pseudo-headers belong, a regular field at the end.
        headers = [*extra, *headers] if extra[0][0].startswith(":") else [*headers, *extra]
        stream_id = _request(client, headers, frame(create.SerializeToString()))
        assert client.wait(stream_id, timeout=10).reset_code == PROTOCOL_ERROR
        # The connection carries on, and the refused CreateRun created nothing.
        assert client.call(SYSTEM, frame(b"")).grpc_status == 0 and not client.goaway
    finally:
        client.close()
    c = worker.client("app1")
    assert not c.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=c.md, timeout=10).runs


@pytest.mark.parametrize("drop", [":method", ":scheme", ":path"])
def test_a_request_missing_a_pseudo_header_is_reset_at_once(make_worker, drop):
    worker = make_worker()
    client = _lenient(RawClient(worker.target, worker.pem, worker.bearers["app1"]))
    try:
        headers = [(n, v) for n, v in _create_headers(client) if n != drop]
        started = time.monotonic()
        stream_id = _request(client, headers, b"")
        assert client.wait(stream_id, timeout=10).reset_code == PROTOCOL_ERROR
        assert time.monotonic() - started < 1
    finally:
        client.close()


def test_a_body_that_contradicts_its_content_length_is_reset(make_worker):
    worker = make_worker()
    client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        headers = [*_create_headers(client), ("content-length", "3")]
        stream_id = _request(client, headers, frame(b""))  # 5 bytes
        assert client.wait(stream_id, timeout=10).reset_code == PROTOCOL_ERROR
        assert client.call(SYSTEM, frame(b"")).grpc_status == 0 and not client.goaway
    finally:
        client.close()


def test_unknown_frame_types_are_ignored(make_worker):
    worker = make_worker()
    client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        client.sock.sendall(_raw_frame(0xFA, 0, 0, b"extension") + _raw_frame(0x10, 0, 1, b"\x00\x01"))
        assert client.call(SYSTEM, frame(b"")).grpc_status == 0 and not client.goaway
    finally:
        client.close()


def test_a_request_that_is_not_post_gets_a_405_with_a_body(make_worker):
    worker = make_worker()
    client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        stream_id = _request(client, [(":method", "GET"), (":scheme", "https"), (":path", "/"),
                                      (":authority", client.authority)], b"")
        outcome = client.wait(stream_id)
        assert outcome.headers[":status"] == "405" and outcome.headers["allow"] == "POST"
        assert b"gRPC" in outcome.data and outcome.ended
    finally:
        client.close()
