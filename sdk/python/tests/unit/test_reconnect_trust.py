"""A held client checks every connection grpcio opens, not only the first (C4, C5).

The genuine worker serves the first connection, then goes away, and a wrong listener takes
its port: TLS 1.2 only, a foreign leaf, or the genuine leaf followed by an extra
certificate. The next call, and a watch in progress, must fail with the same typed error a
fresh connect gives, and the wrong listener must receive no byte of HTTP/2 (so no bearer).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client import PinMismatchError, TlsPolicyError
from colossus_agent_client.api.v1alpha1 import run_service_pb2_grpc
from conftest import daemon_options
from fake_worker import (
    BEARER,
    CountingProvider,
    FakeWorker,
    Leaf,
    make_leaf,
    make_run,
    output_event,
)
from tls_servers import RecordingTlsServer


def wrong_listener(tmp: Path, port: int, leaf: Leaf, kind: str) -> RecordingTlsServer:
    """A TLS server taking over ``port``: TLS 1.2 only, a foreign leaf, or a chain."""
    if kind == "tls12":
        return RecordingTlsServer(
            tmp, leaf, chain=leaf.cert_pem, max_version=ssl.TLSVersion.TLSv1_2, port=port
        )
    if kind == "foreign-leaf":
        foreign = make_leaf()
        return RecordingTlsServer(tmp, foreign, chain=foreign.cert_pem, port=port)
    assert kind == "leaf-with-intermediate"
    chain = leaf.cert_pem + make_leaf(ca=True).cert_pem
    return RecordingTlsServer(tmp, leaf, chain=chain, port=port)


KINDS = {
    "tls12": TlsPolicyError,
    "foreign-leaf": PinMismatchError,
    "leaf-with-intermediate": TlsPolicyError,
}


@pytest.fixture
def wrong(tmp_path: Path) -> Iterator[list[RecordingTlsServer]]:
    started: list[RecordingTlsServer] = []
    yield started
    for listener in started:
        listener.close()


def _take_over(
    fake: FakeWorker, tmp: Path, kind: str, started: list[RecordingTlsServer]
) -> RecordingTlsServer:
    fake.stop()
    listener = wrong_listener(tmp, fake.port, fake.leaf, kind)
    started.append(listener)
    return listener


def _assert_nothing_reached(listener: RecordingTlsServer) -> None:
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
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[RecordingTlsServer], kind: str
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
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[RecordingTlsServer], kind: str
) -> None:
    provider = CountingProvider()
    options = daemon_options(fake, api_dir, credentials=provider)
    run_id = _watch_script(fake)
    seen: list[int] = []
    listener: RecordingTlsServer | None = None
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
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[RecordingTlsServer], kind: str
) -> None:
    provider = CountingProvider()
    options = daemon_options(fake, api_dir, credentials=provider)
    run = make_run("run_held")
    fake.b.runs[run.run_id] = run

    async def scenario() -> RecordingTlsServer:
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
    fake: FakeWorker, api_dir: Path, tmp_path: Path, wrong: list[RecordingTlsServer], kind: str
) -> None:
    provider = CountingProvider()
    options = daemon_options(fake, api_dir, credentials=provider)
    run_id = _watch_script(fake)
    seen: list[int] = []

    async def scenario() -> RecordingTlsServer | None:
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
