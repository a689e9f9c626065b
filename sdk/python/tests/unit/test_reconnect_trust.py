"""A held client checks every connection grpcio opens, not only the first (C4, C5).

The genuine worker serves the first connection, then goes away, and a wrong listener takes
its port: TLS 1.2 only, a foreign leaf, or the genuine leaf followed by an extra
certificate. The next call, and a watch in progress, must fail with the same typed error a
fresh connect gives, and the wrong listener must receive no byte of HTTP/2 (so no bearer).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client import PinMismatchError, TlsPolicyError
from colossus_agent_client.api.v1alpha1 import run_service_pb2_grpc
from conftest import daemon_options
from fake_worker import BEARER, FakeWorker, Leaf, make_leaf, make_run, output_event


class WrongListener:
    """A TLS server on a given port that keeps every byte a client sent after its handshake."""

    def __init__(self, tmp: Path, port: int, leaf: Leaf, kind: str) -> None:
        chain = leaf.cert_pem
        if kind == "foreign-leaf":
            leaf = make_leaf()
            chain = leaf.cert_pem
        elif kind == "leaf-with-intermediate":
            chain = leaf.cert_pem + make_leaf(ca=True).cert_pem
        cert, key = tmp / f"wrong-{kind}.pem", tmp / f"wrong-{kind}-key.pem"
        cert.write_bytes(chain)
        key.write_bytes(leaf.key_pem)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self.ctx.maximum_version = (
            ssl.TLSVersion.TLSv1_2 if kind == "tls12" else ssl.TLSVersion.TLSv1_3
        )
        self.ctx.set_alpn_protocols(["h2"])
        self.ctx.load_cert_chain(cert, key)
        self.received: list[bytes] = []
        self.handshakes = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        try:
            with self.ctx.wrap_socket(conn, server_side=True) as tls:
                self.handshakes += 1
                tls.settimeout(5)
                while chunk := tls.recv(65536):
                    data += chunk
        except (OSError, ssl.SSLError):
            pass
        self.received.append(data)

    def close(self) -> None:
        self.sock.close()


KINDS = {
    "tls12": TlsPolicyError,
    "foreign-leaf": PinMismatchError,
    "leaf-with-intermediate": TlsPolicyError,
}


class CountingProvider:
    def __init__(self) -> None:
        self.calls = 0

    def load_bearer(self) -> str:
        self.calls += 1
        return BEARER


@pytest.fixture
def wrong(tmp_path: Path) -> Iterator[list[WrongListener]]:
    started: list[WrongListener] = []
    yield started
    for listener in started:
        listener.close()


def _take_over(
    fake: FakeWorker, tmp: Path, kind: str, started: list[WrongListener]
) -> WrongListener:
    fake.stop()
    listener = WrongListener(tmp, fake.port, fake.leaf, kind)
    started.append(listener)
    return listener


def _assert_nothing_reached(listener: WrongListener) -> None:
    assert all(data == b"" for data in listener.received), "bytes reached the wrong listener"
    assert not any(BEARER.encode() in data for data in listener.received)


def _fresh_connect_error(options: colossus.DaemonOptions) -> type[Exception]:
    with pytest.raises(colossus.TrustError) as fresh:
        colossus.Client.connect(options)
    return type(fresh.value)


def _watch_script(fake: FakeWorker) -> str:
    run = make_run("run_held")
    fake.b.runs[run.run_id] = run
    fake.b.watch_scripts.append(
        [
            ("event", output_event(run.run_id, 1, "one")),
            ("event", output_event(run.run_id, 2, "two")),
            ("stall", 30.0),
        ]
    )
    return run.run_id


@pytest.mark.parametrize("kind", list(KINDS))
def test_held_client_refuses_a_wrong_listener_on_reconnect(
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[WrongListener], kind: str
) -> None:
    provider = CountingProvider()
    options = daemon_options(fake, api_dir, credentials=provider)
    run = make_run("run_held")
    fake.b.runs[run.run_id] = run
    with colossus.Client.connect(options) as client:
        assert client.runs.get(run.run_id).run_id == run.run_id
        listener = _take_over(fake, tmp_path, kind, wrong)
        with pytest.raises(KINDS[kind]) as info:
            client.runs.get(run.run_id)
        assert BEARER not in str(info.value)
        # A mutation on the same client meets the same refusal, and sends nothing either.
        with pytest.raises(KINDS[kind]):
            client.runs.cancel(run.run_id)
        with pytest.raises(KINDS[kind]):
            client.artifacts.upload(b"report", media_type="text/plain")
    assert provider.calls == 1
    _assert_nothing_reached(listener)
    assert _fresh_connect_error(options) is KINDS[kind]
    _assert_nothing_reached(listener)


@pytest.mark.parametrize("kind", list(KINDS))
def test_watch_in_progress_refuses_a_wrong_listener_on_reconnect(
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[WrongListener], kind: str
) -> None:
    provider = CountingProvider()
    options = daemon_options(fake, api_dir, credentials=provider)
    run_id = _watch_script(fake)
    seen: list[int] = []
    listener: WrongListener | None = None
    with colossus.Client.connect(options) as client:
        with pytest.raises(KINDS[kind]):
            for event in client.runs.watch(run_id):
                seen.append(event.sequence)
                if len(seen) == 2:
                    listener = _take_over(fake, tmp_path, kind, wrong)
    assert seen == [1, 2]
    assert provider.calls == 1
    assert listener is not None
    _assert_nothing_reached(listener)


@pytest.mark.parametrize("kind", list(KINDS))
def test_async_held_client_refuses_a_wrong_listener_on_reconnect(
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[WrongListener], kind: str
) -> None:
    provider = CountingProvider()
    options = daemon_options(fake, api_dir, credentials=provider)
    run = make_run("run_held")
    fake.b.runs[run.run_id] = run

    async def scenario() -> WrongListener:
        async with await colossus.AsyncClient.connect(options) as client:
            assert (await client.runs.get(run.run_id)).run_id == run.run_id
            listener = _take_over(fake, tmp_path, kind, wrong)
            with pytest.raises(KINDS[kind]):
                await client.runs.get(run.run_id)
            with pytest.raises(KINDS[kind]):
                await client.runs.cancel(run.run_id)
            with pytest.raises(KINDS[kind]):
                await client.artifacts.upload(b"report", media_type="text/plain")
            return listener

    listener = asyncio.run(scenario())
    assert provider.calls == 1
    _assert_nothing_reached(listener)


@pytest.mark.parametrize("kind", list(KINDS))
def test_async_watch_in_progress_refuses_a_wrong_listener_on_reconnect(
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[WrongListener], kind: str
) -> None:
    provider = CountingProvider()
    options = daemon_options(fake, api_dir, credentials=provider)
    run_id = _watch_script(fake)
    seen: list[int] = []

    async def scenario() -> WrongListener | None:
        listener = None
        async with await colossus.AsyncClient.connect(options) as client:
            with pytest.raises(KINDS[kind]):
                async for event in client.runs.watch(run_id):
                    seen.append(event.sequence)
                    if len(seen) == 2:
                        listener = _take_over(fake, tmp_path, kind, wrong)
        return listener

    listener = asyncio.run(scenario())
    assert seen == [1, 2]
    assert provider.calls == 1
    assert listener is not None
    _assert_nothing_reached(listener)


def _genuine_again(leaf: Leaf, port: int) -> FakeWorker:
    """A second genuine worker (same leaf) serving runs on ``port``."""
    again = FakeWorker(leaf)
    again.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    run_service_pb2_grpc.add_RunServiceServicer_to_server(again, again.server)
    creds = grpc.ssl_server_credentials([(leaf.key_pem, leaf.cert_pem)])
    assert again.server.add_secure_port(f"127.0.0.1:{port}", creds) == port
    return again.start()


def test_a_genuine_worker_back_on_the_port_serves_the_held_client(
    fake: FakeWorker, api_dir: Path, leaf: Leaf
) -> None:
    """A verified reconnect is forwarded as before: the relay refuses only wrong listeners."""
    run = make_run("run_held")
    fake.b.runs[run.run_id] = run
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        client.runs.get(run.run_id)
        fake.stop()
        again = _genuine_again(leaf, fake.port)
        again.b.runs[run.run_id] = run
        try:
            assert client.runs.get(run.run_id).run_id == run.run_id
            assert again.methods() == ["GetRun"]
        finally:
            again.stop()
