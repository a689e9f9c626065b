"""A worker the connect checks refuse receives no request and no bearer, on any connection.

Against a TLS 1.2-only worker or one presenting an extra chain certificate, the credential
provider is never asked and no HTTP/2 request (HEADERS or DATA frame) reaches the worker,
whatever connections were opened to it. Also: a reset during the TLS 1.3 handshake is the
same refusal as an EOF, and the reused TLS context still checks every live certificate.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import stat
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import colossus_agent_client as colossus
from colossus_agent_client import PinMismatchError, TlsPolicyError
from colossus_agent_client._transport._certificate import parse_leaf_certificate
from colossus_agent_client._transport._descriptor import Endpoint
from colossus_agent_client._transport._preflight import preflight
from fake_worker import BEARER, INSTANCE_ID, CountingProvider, Leaf, make_leaf
from tls_servers import RecordingTlsServer

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADERS, DATA = 0x1, 0x0


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[RecordingTlsServer]]:
    started: list[RecordingTlsServer] = []
    yield started
    for server in started:
        server.close()


def _discovery(directory: Path, endpoint: Endpoint, leaf: Leaf) -> Path:
    directory.mkdir(mode=0o700)
    descriptor = {
        "endpoint": f"https://{endpoint.host}:{endpoint.port}",
        "instance_id": INSTANCE_ID,
        "pid": os.getpid(),
        "api_version": "v1alpha1",
        "certificate_sha256": leaf.sha256,
    }
    for name, data in (
        ("endpoint.json", json.dumps(descriptor).encode()),
        ("certificate.pem", leaf.cert_pem),
    ):
        (directory / name).write_bytes(data)
        os.chmod(directory / name, stat.S_IRUSR | stat.S_IWUSR)
    return directory


def _requests_sent(received: bytes) -> list[int]:
    """The HTTP/2 frame types of one connection's bytes that carry a request."""
    if not received:
        return []
    assert received.startswith(PREFACE)
    rest, kinds = received[len(PREFACE) :], []
    while len(rest) >= 9:
        length, kind = struct.unpack(">I", b"\0" + rest[:3])[0], rest[3]
        if kind in (HEADERS, DATA):
            kinds.append(kind)
        rest = rest[9 + length :]
    return kinds


def _options(api_dir: Path, leaf: Leaf, provider: CountingProvider) -> colossus.DaemonOptions:
    return colossus.DaemonOptions(
        public_api_dir=api_dir,
        expected_instance_id=INSTANCE_ID,
        expected_certificate_sha256=leaf.sha256,
        credentials=provider,
        connect_timeout=5.0,
    )


def _wait_for_connections(server: RecordingTlsServer, at_least: int) -> None:
    deadline = threading.Event()
    for _ in range(100):
        if len(server.received) >= at_least:
            return
        deadline.wait(0.05)


def test_tls12_worker_gets_no_request_and_no_bearer(
    tmp_path: Path, leaf: Leaf, servers: list[RecordingTlsServer]
) -> None:
    server = RecordingTlsServer(
        tmp_path, leaf, chain=leaf.cert_pem, max_version=ssl.TLSVersion.TLSv1_2
    )
    servers.append(server)
    provider = CountingProvider()
    api_dir = _discovery(tmp_path / "api", server.endpoint, leaf)
    with pytest.raises(TlsPolicyError):
        colossus.Client.connect(_options(api_dir, leaf, provider))
    _wait_for_connections(server, 1)
    assert provider.calls == 0
    assert server.received, "the pre-flight reached the worker"
    assert all(_requests_sent(data) == [] for data in server.received)
    assert all(BEARER.encode() not in data for data in server.received)


async def test_async_tls12_worker_gets_no_request_and_no_bearer(
    tmp_path: Path, leaf: Leaf, servers: list[RecordingTlsServer]
) -> None:
    server = RecordingTlsServer(
        tmp_path, leaf, chain=leaf.cert_pem, max_version=ssl.TLSVersion.TLSv1_2
    )
    servers.append(server)
    provider = CountingProvider()
    api_dir = _discovery(tmp_path / "api", server.endpoint, leaf)
    with pytest.raises(TlsPolicyError):
        await colossus.AsyncClient.connect(_options(api_dir, leaf, provider))
    _wait_for_connections(server, 1)
    assert provider.calls == 0
    assert all(_requests_sent(data) == [] for data in server.received)


def test_chain_presenting_worker_gets_no_request(
    tmp_path: Path, leaf: Leaf, servers: list[RecordingTlsServer]
) -> None:
    extra = make_leaf(ca=True).cert_pem
    server = RecordingTlsServer(tmp_path, leaf, chain=leaf.cert_pem + extra)
    servers.append(server)
    provider = CountingProvider()
    api_dir = _discovery(tmp_path / "api", server.endpoint, leaf)
    with pytest.raises(TlsPolicyError, match="2 certificates"):
        colossus.Client.connect(_options(api_dir, leaf, provider))
    _wait_for_connections(server, 1)
    assert provider.calls == 0
    assert all(_requests_sent(data) == [] for data in server.received)


def test_reset_during_the_handshake_is_a_tls_refusal(leaf: Leaf) -> None:
    """A worker that drops the TLS 1.3 hello gets one verdict, whether it closes or resets."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def reset_after_hello() -> None:
        conn, _ = listener.accept()
        conn.recv(1)  # part of the hello stays unread, so closing sends a reset
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    thread = threading.Thread(target=reset_after_hello, daemon=True)
    thread.start()
    try:
        endpoint = Endpoint("127.0.0.1", listener.getsockname()[1])
        with pytest.raises(TlsPolicyError):
            preflight(endpoint, leaf.sha256, parse_leaf_certificate(leaf.cert_pem), 5.0)
    finally:
        thread.join(5)
        listener.close()


def test_a_reused_context_still_checks_every_live_certificate(
    tmp_path: Path, leaf: Leaf, servers: list[RecordingTlsServer]
) -> None:
    anchor = parse_leaf_certificate(leaf.cert_pem)
    genuine = RecordingTlsServer(tmp_path, leaf, chain=leaf.cert_pem)
    other = make_leaf()
    foreign = RecordingTlsServer(tmp_path, other, chain=other.cert_pem)
    servers.extend([genuine, foreign])
    for _ in range(2):
        assert preflight(genuine.endpoint, leaf.sha256, anchor, 5.0) == leaf.sha256
        with pytest.raises(PinMismatchError):
            preflight(foreign.endpoint, leaf.sha256, anchor, 5.0)
