"""The trust relay on its own: verdicts, forwarding, its private socket, and no leaks."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import socket
import ssl
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import colossus_agent_client as colossus
from colossus_agent_client import PinMismatchError, TlsPolicyError, TransportError
from colossus_agent_client._transport._certificate import parse_leaf_certificate
from colossus_agent_client._transport._relay import TrustRelay
from conftest import daemon_options
from fake_worker import FakeWorker, Leaf, make_leaf, make_run, output_event
from tls_servers import EchoTlsServer, ThreadedTlsServer


@pytest.fixture
def echo(tmp_path: Path, leaf: Leaf) -> Iterator[dict[str, EchoTlsServer]]:
    servers = {
        "genuine": EchoTlsServer(tmp_path, leaf, chain=leaf.cert_pem),
        "tls12": EchoTlsServer(
            tmp_path, leaf, chain=leaf.cert_pem, max_version=ssl.TLSVersion.TLSv1_2
        ),
        "chain": EchoTlsServer(tmp_path, leaf, chain=leaf.cert_pem + make_leaf(ca=True).cert_pem),
    }
    foreign = make_leaf()
    servers["foreign"] = EchoTlsServer(tmp_path, foreign, chain=foreign.cert_pem)
    yield servers
    for server in servers.values():
        server.close()


def _relay(server: ThreadedTlsServer, leaf: Leaf) -> TrustRelay:
    return TrustRelay(server.endpoint, leaf.sha256, parse_leaf_certificate(leaf.cert_pem), 5.0)


def _through(relay: TrustRelay, payload: bytes) -> bytes:
    """Sends ``payload`` through the relay's socket; what came back before it closed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as local:
        local.settimeout(10)
        local.connect(relay.path)

        def send() -> None:
            with contextlib.suppress(OSError):  # a refusal closes the socket mid-send
                local.sendall(payload)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        back = bytearray()
        while len(back) < len(payload):
            try:
                chunk = local.recv(1 << 20)
            except ConnectionResetError:  # closed with our bytes unread: a refusal
                break
            if not chunk:
                break
            back += chunk
        sender.join(10)
        return bytes(back)


@pytest.mark.parametrize(
    ("kind", "error"),
    [("tls12", TlsPolicyError), ("foreign", PinMismatchError), ("chain", TlsPolicyError)],
)
def test_a_refused_connection_is_closed_unread_and_its_error_recorded(
    echo: dict[str, EchoTlsServer], leaf: Leaf, kind: str, error: type[Exception]
) -> None:
    relay = _relay(echo[kind], leaf)
    try:
        assert relay.refusal() is None
        assert _through(relay, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"x" * 1000) == b""
        assert isinstance(relay.refusal(), error)
        assert echo[kind].received == 0
    finally:
        relay.close()


def test_preflight_raises_the_refusal_a_reconnect_records(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    relay = _relay(echo["foreign"], leaf)
    try:
        with pytest.raises(PinMismatchError):
            relay.preflight()
        assert isinstance(relay.refusal(), PinMismatchError)
    finally:
        relay.close()


def test_bytes_pass_intact_both_ways_after_the_checks(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    relay = _relay(echo["genuine"], leaf)
    try:
        relay.preflight()
        payload = os.urandom(3 * 1024 * 1024 + 17)
        assert _through(relay, payload) == payload
        # The pre-flight's connection carried it: one handshake, not two.
        assert echo["genuine"].connections == 1
        assert relay.refusal() is None
        # A second local connection gets a newly verified connection of its own.
        assert _through(relay, b"again") == b"again"
        assert echo["genuine"].connections == 2
    finally:
        relay.close()


def test_the_verified_connection_sends_small_writes_at_once(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    # Nagle's algorithm would hold a window update or a GetRun request behind an
    # unacknowledged segment until the worker's delayed ACK.
    relay = _relay(echo["genuine"], leaf)
    try:
        relay.preflight()
        kept = relay._parked
        assert kept is not None
        assert kept.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        relay.close()


def test_a_connection_that_passes_clears_an_earlier_refusal(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    relay = _relay(echo["genuine"], leaf)
    try:
        relay._refusal = PinMismatchError("an earlier listener")
        assert _through(relay, b"ping") == b"ping"
        assert relay.refusal() is None
    finally:
        relay.close()


def test_a_refused_connection_is_recorded_as_unreachable_until_one_passes(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    # The connect's GetServerInfo ends on this record (S1): grpcio only sees its local
    # connection closed and would wait for a ready channel until the call's deadline.
    server = echo["genuine"]
    relay = _relay(server, leaf)
    try:
        assert relay.unreachable() is None
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            closed_port = probe.getsockname()[1]
        relay._endpoint = dataclasses.replace(server.endpoint, port=closed_port)
        assert _through(relay, b"ping") == b""
        refused = relay.unreachable()
        assert isinstance(refused, TransportError)
        assert refused.reason == "UNREACHABLE"
        assert relay.refusal() is None  # nothing listens: no trust verdict
        relay._endpoint = server.endpoint
        assert _through(relay, b"ping") == b"ping"
        assert relay.unreachable() is None
    finally:
        relay.close()


def test_the_socket_folder_is_private_and_removed_on_close(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    relay = _relay(echo["genuine"], leaf)
    folder = Path(relay.path).parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(Path(relay.path).stat().st_mode)
    assert relay.target == "unix:" + relay.path
    relay.close()
    assert not folder.exists()
    relay.close()  # idempotent


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_many_calls_and_closed_watches_leak_no_relay_connection(
    fake: FakeWorker, api_dir: Path
) -> None:
    run = make_run("run_many")
    fake.b.runs[run.run_id] = run
    fake.b.events[run.run_id] = [output_event(run.run_id, 1), output_event(run.run_id, 2)]
    before = _open_fds()
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        relay = client._backend.connection().relay  # type: ignore[attr-defined]
        assert relay is not None
        for _ in range(200):
            client.runs.get(run.run_id)
        for _ in range(20):
            watch = client.runs.watch(run.run_id)
            assert next(iter(watch)).sequence == 1
            watch.close()
        # grpcio multiplexes every call on one connection; the relay holds exactly that one.
        assert len(relay._links) == 1
        folder = Path(relay.path).parent
    assert not folder.exists()
    assert not relay._thread.is_alive()
    assert _open_fds() <= before + 2  # grpcio may keep a poller descriptor per process


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_closing_its_copy_leaves_the_parents_relay_working(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    relay = _relay(echo["genuine"], leaf)
    try:
        pid = os.fork()
        if pid == 0:  # the child: close the inherited copy, then leave at once
            relay.close()
            os._exit(0)
        os.waitpid(pid, 0)
        assert Path(relay.path).exists()
        assert _through(relay, b"still here") == b"still here"
    finally:
        relay.close()


def test_a_client_dropped_without_close_stops_its_relay(fake: FakeWorker, api_dir: Path) -> None:
    client = colossus.Client.connect(daemon_options(fake, api_dir))
    relay = client._backend.connection().relay  # type: ignore[attr-defined]
    folder = Path(relay.path).parent
    assert folder.exists()
    del client
    gc.collect()
    relay._thread.join(5)
    assert not relay._thread.is_alive()
    assert not folder.exists()


class DroppingListener(ThreadedTlsServer):
    """Drops every TLS 1.3-only hello without a TLS byte; answers TLS 1.2 when ``tls12``."""

    def __init__(self, tmp: Path, leaf: Leaf, *, tls12: bool) -> None:
        self.tls12 = tls12
        super().__init__(tmp, leaf, chain=leaf.cert_pem, max_version=ssl.TLSVersion.TLSv1_2)

    def serve(self, conn: socket.socket) -> None:
        with conn:
            hello = conn.recv(4096, socket.MSG_PEEK)
            # A TLS 1.3-only hello offers no TLS 1.2 cipher suite (0xC0 0x2B and friends).
            if b"\xc0\x2b" not in hello and b"\xc0\x2f" not in hello:
                return  # closed without a TLS byte
            if self.tls12:
                with contextlib.suppress(OSError, ssl.SSLError):
                    with self.ctx.wrap_socket(conn, server_side=True) as tls:
                        tls.recv(1)


@pytest.mark.parametrize(("tls12", "error"), [(True, TlsPolicyError), (False, None)])
def test_a_reconnect_dropped_without_a_tls_byte_is_probed(
    tmp_path: Path, leaf: Leaf, tls12: bool, error: type[Exception] | None
) -> None:
    listener = DroppingListener(tmp_path, leaf, tls12=tls12)
    relay = _relay(listener, leaf)
    try:
        assert _through(relay, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == b""
        if error is None:
            # A dead or restarting listener: retryable, nothing recorded.
            assert relay.refusal() is None
        else:
            assert isinstance(relay.refusal(), error)
    finally:
        relay.close()
        listener.close()


@pytest.mark.parametrize(("tls12", "error"), [(True, TlsPolicyError), (False, TransportError)])
def test_a_preflight_dropped_without_a_tls_byte_is_probed_too(
    tmp_path: Path, leaf: Leaf, tls12: bool, error: type[Exception]
) -> None:
    # The first connection of connect classifies a silent drop like every reconnect (and
    # like the TypeScript and Go SDKs): a listener answering TLS 1.2 is a policy refusal,
    # one that answers nothing is a worker going away, a transport failure.
    listener = DroppingListener(tmp_path, leaf, tls12=tls12)
    relay = _relay(listener, leaf)
    try:
        with pytest.raises(error) as raised:
            relay.preflight()
        assert type(raised.value) is error
    finally:
        relay.close()
        listener.close()


class ClosesFirstConnections(EchoTlsServer):
    """Closes its first ``drops`` connections on accept, before a TLS byte, then echoes."""

    def __init__(self, tmp: Path, leaf: Leaf, *, drops: int) -> None:
        self.drops = drops
        super().__init__(tmp, leaf, chain=leaf.cert_pem)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_3  # like the worker: the probe fails

    def serve(self, conn: socket.socket) -> None:
        if self.connections <= self.drops:
            conn.close()  # nothing read, nothing sent: a FIN the client sees as EOF
            return
        super().serve(conn)


def test_a_preflight_dropped_once_without_a_tls_byte_is_tried_again(
    tmp_path: Path, leaf: Leaf
) -> None:
    # A worker restarting under the client drops one handshake: connect carries on rather
    # than failing (or, worse, calling the silence a TLS policy refusal).
    server = ClosesFirstConnections(tmp_path, leaf, drops=1)
    relay = _relay(server, leaf)
    try:
        relay.preflight()
        assert relay.refusal() is None
        # the dropped pre-flight, its probe, and the pre-flight that passed
        assert server.connections == 3
        assert _through(relay, b"ping") == b"ping"
    finally:
        relay.close()
        server.close()


def test_a_connection_made_during_the_preflight_waits_for_it_and_reuses_it(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    server = echo["genuine"]
    relay = TrustRelay(
        server.endpoint,
        leaf.sha256,
        parse_leaf_certificate(leaf.cert_pem),
        5.0,
        preflight_first=True,
    )
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as local:
            local.settimeout(10)
            local.connect(relay.path)
            local.sendall(b"early bytes")  # they wait, unread, until the verdict
            relay.preflight()
            assert local.recv(100) == b"early bytes"
        assert server.connections == 1
    finally:
        relay.close()


def test_a_connection_made_during_a_failed_preflight_is_closed_unforwarded(
    echo: dict[str, EchoTlsServer], leaf: Leaf
) -> None:
    server = echo["foreign"]
    relay = TrustRelay(
        server.endpoint,
        leaf.sha256,
        parse_leaf_certificate(leaf.cert_pem),
        5.0,
        preflight_first=True,
    )
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as local:
            local.settimeout(10)
            local.connect(relay.path)
            local.sendall(b"early bytes")
            with pytest.raises(PinMismatchError):
                relay.preflight()
            with contextlib.suppress(ConnectionResetError):
                assert local.recv(100) == b""
        assert server.connections == 1  # the pre-flight's only
        assert server.received == 0
    finally:
        relay.close()
