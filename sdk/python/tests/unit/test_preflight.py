"""C4: the TLS 1.3 pre-flight refuses TLS 1.2, foreign leaves and extra chain certificates."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from colossus_agent_client import PinMismatchError, TlsPolicyError, TransportError
from colossus_agent_client._transport._certificate import parse_leaf_certificate
from colossus_agent_client._transport._descriptor import Endpoint
from colossus_agent_client._transport._preflight import open_verified, preflight, preflight_async
from fake_worker import Leaf, make_leaf


class TlsServer:
    """A bare TLS listener that completes handshakes and closes; for pre-flight tests."""

    def __init__(
        self,
        tmp: Path,
        leaf: Leaf,
        *,
        version: ssl.TLSVersion,
        extra_chain: bytes = b"",
        alpn: list[str] | None = None,
    ) -> None:
        cert = tmp / "chain.pem"
        key = tmp / "key.pem"
        cert.write_bytes(leaf.cert_pem + extra_chain)
        key.write_bytes(leaf.key_pem)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self.ctx.maximum_version = version
        self.ctx.set_alpn_protocols(["h2"] if alpn is None else alpn)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                pass

    def close(self) -> None:
        self._stop = True
        self.sock.close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    servers: list[TlsServer] = []

    def start(leaf: Leaf, **kw: object) -> Endpoint:
        server = TlsServer(tmp_path, leaf, **kw)  # type: ignore[arg-type]
        servers.append(server)
        return Endpoint("127.0.0.1", server.port)

    yield start
    for s in servers:
        s.close()


def test_genuine_tls13_leaf_passes(serve, leaf: Leaf) -> None:  # type: ignore[no-untyped-def]
    endpoint = serve(leaf, version=ssl.TLSVersion.TLSv1_3)
    anchor = parse_leaf_certificate(leaf.cert_pem)
    assert preflight(endpoint, leaf.sha256, anchor, 5.0) == leaf.sha256


def test_tls12_server_is_refused(serve, leaf: Leaf) -> None:  # type: ignore[no-untyped-def]
    endpoint = serve(leaf, version=ssl.TLSVersion.TLSv1_2)
    with pytest.raises(TlsPolicyError):
        preflight(endpoint, leaf.sha256, parse_leaf_certificate(leaf.cert_pem), 5.0)


def test_foreign_leaf_is_refused(serve, leaf: Leaf) -> None:  # type: ignore[no-untyped-def]
    endpoint = serve(make_leaf(), version=ssl.TLSVersion.TLSv1_3)
    with pytest.raises(PinMismatchError):
        preflight(endpoint, leaf.sha256, parse_leaf_certificate(leaf.cert_pem), 5.0)


def test_extra_chain_certificate_is_refused(serve, leaf: Leaf) -> None:  # type: ignore[no-untyped-def]
    ca = make_leaf(ca=True)
    endpoint = serve(leaf, version=ssl.TLSVersion.TLSv1_3, extra_chain=ca.cert_pem)
    with pytest.raises(TlsPolicyError) as info:
        preflight(endpoint, leaf.sha256, parse_leaf_certificate(leaf.cert_pem), 5.0)
    assert "2 certificates" in str(info.value)


def test_a_listener_agreeing_to_no_h2_is_refused(serve, leaf: Leaf) -> None:  # type: ignore[no-untyped-def]
    # The pinned leaf over TLS 1.3, but no HTTP/2 through ALPN: refused in the pre-flight,
    # before the bearer (C4; the case pin-checks.c4.no-h2-alpn).
    endpoint = serve(leaf, version=ssl.TLSVersion.TLSv1_3, alpn=["http/1.1"])
    with pytest.raises(TlsPolicyError) as info:
        preflight(endpoint, leaf.sha256, parse_leaf_certificate(leaf.cert_pem), 5.0)
    assert info.value.reason == "TLS_HANDSHAKE"


def test_nothing_listening_is_a_transport_error(leaf: Leaf) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(TransportError):
        preflight(
            Endpoint("127.0.0.1", port), leaf.sha256, parse_leaf_certificate(leaf.cert_pem), 2.0
        )


async def test_async_preflight_rules(serve, leaf: Leaf) -> None:  # type: ignore[no-untyped-def]
    anchor = parse_leaf_certificate(leaf.cert_pem)
    ok = serve(leaf, version=ssl.TLSVersion.TLSv1_3)
    assert await preflight_async(ok, leaf.sha256, anchor, 5.0) == leaf.sha256
    with pytest.raises(TlsPolicyError):
        await preflight_async(serve(leaf, version=ssl.TLSVersion.TLSv1_2), leaf.sha256, anchor, 5.0)
    with pytest.raises(PinMismatchError):
        await preflight_async(
            serve(make_leaf(), version=ssl.TLSVersion.TLSv1_3), leaf.sha256, anchor, 5.0
        )
    with pytest.raises(TlsPolicyError):
        await preflight_async(
            serve(leaf, version=ssl.TLSVersion.TLSv1_3, extra_chain=make_leaf(ca=True).cert_pem),
            leaf.sha256,
            anchor,
            5.0,
        )


def test_a_handshake_nobody_answers_ends_once_the_worker_is_gone(leaf: Leaf) -> None:
    # A sidecar worker exited but a child kept its listening socket: the TCP connection
    # is made and nobody answers. The handshake ends when gone() says so, not at the
    # connect timeout (the case sidecar.exit-keeping-socket-during-connect).
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        endpoint = Endpoint("127.0.0.1", listener.getsockname()[1])
        exited_at = time.monotonic() + 0.3
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            open_verified(
                endpoint,
                leaf.sha256,
                parse_leaf_certificate(leaf.cert_pem),
                10.0,
                drop_is_refusal=False,
                gone=lambda: time.monotonic() >= exited_at,
            )
        assert info.value.reason == "UNREACHABLE"
        assert time.monotonic() - started < 3.0
    finally:
        listener.close()
