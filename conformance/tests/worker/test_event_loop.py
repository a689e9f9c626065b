"""The worker serves alike on uvloop and on asyncio's own loop (``--event-loop``, W1, W11).

The listener runs the TLS upgrade itself, and the two loops differ exactly
there: uvloop starts reading a new connection as soon as ``connection_made``
returns, paused or not. Each check runs on both loops: a TLS 1.3 call (also a
burst of connections that send their ClientHello at once, none of which may
lose it), the connection cap (where idle connections make room), the handshake
timeout and the silent-close fault; and the eager start the listener relies on is
checked on both loops by itself.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from raw_h2 import RawClient

from colossus_reference_worker import event_loop
from colossus_reference_worker.eager_start import start_now

from conftest import pb

LOOPS = ("asyncio", "uvloop")
# The client connection preface and an empty SETTINGS frame.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
GET_RUN = "/colossus.api.v1alpha1.RunService/GetRun"
# A TLS handshake record header announcing 200 bytes that never come.
STALLED_RECORD = bytes.fromhex("16030100c8")


@pytest.fixture(params=LOOPS)
def loop(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder whose path fits a Unix socket name (pytest's temporary paths may not)."""
    path = Path(tempfile.mkdtemp(prefix="evloop"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _start(make_worker, loop: str, *args: str):
    worker = make_worker("--event-loop", loop, *args, apps=("app1",))
    assert _logged(worker, f"serving on the {loop} event loop")
    return worker


def _tls_context(pem: bytes) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=pem.decode())
    ctx.set_alpn_protocols(["h2"])
    return ctx


def _open_h2(host: str, port: int, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    """A TLS connection that sent the HTTP/2 preface and read the worker's first frame."""
    raw = socket.create_connection((host, port), timeout=30)
    try:
        tls = ctx.wrap_socket(raw, server_hostname=host)
    except BaseException:
        raw.close()
        raise
    tls.sendall(H2_PREFACE)
    assert tls.recv(9), "the worker closed a connection it had accepted"
    return tls


def _logged(worker, text: str) -> bool:
    """Whether the worker's log shows ``text`` (written just after the close it reports)."""
    deadline = time.monotonic() + 30
    while text not in worker.log_path.read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _closed_by_worker(sock: socket.socket) -> bytes:
    """Everything the worker sent before closing (fails the test if it never closes)."""
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except ConnectionError:
        pass
    return received


def test_a_tls13_call_and_a_burst_of_connections_are_served(make_worker, loop):
    worker = _start(make_worker, loop)
    c = worker.client("app1")
    assert c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md,
                                  timeout=30).server_info
    host, port = worker.target.rsplit(":", 1)
    ctx = _tls_context(worker.pem)
    # Every client sends its ClientHello the moment TCP connects; on uvloop a byte that
    # reached the listener before the TLS protocol took over would stall that handshake.
    with ThreadPoolExecutor(8) as pool:
        held = list(pool.map(lambda _: _open_h2(host, int(port), ctx), range(24)))
    try:
        assert {sock.version() for sock in held} == {"TLSv1.3"}
        assert {sock.selected_alpn_protocol() for sock in held} == {"h2"}
    finally:
        for sock in held:
            sock.close()
    client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        outcome = client.call("/colossus.api.v1alpha1.SystemService/GetServerInfo",
                              b"\x00\x00\x00\x00\x00")
        assert outcome.grpc_status == 0
    finally:
        client.close()
    assert "TLS handshake failed" not in worker.log_path.read_text()


def test_at_the_cap_idle_connections_make_room_and_busy_ones_do_not(make_worker, loop):
    worker = _start(make_worker, loop, "--limit", "max_connections=2")
    host, port = worker.target.rsplit(":", 1)
    ctx = _tls_context(worker.pem)
    idle = [_open_h2(host, int(port), ctx) for _ in range(2)]  # the preface, no stream
    busy: list[RawClient] = []
    try:
        # Each new connection takes the place of the oldest one without an open stream.
        for _ in range(2):
            client = RawClient(worker.target, worker.pem, worker.bearers["app1"])
            busy.append(client)
            client.open(GET_RUN)  # no body: the stream stays open
            client.round_trip()
        for sock in idle:
            _closed_by_worker(sock)
        # Now every connection has an open stream: a new one is refused before TLS.
        with (socket.create_connection((host, int(port)), timeout=30) as raw,
              pytest.raises((ssl.SSLError, ConnectionError))):
            ctx.wrap_socket(raw, server_hostname=host)
    finally:
        for sock in idle:
            sock.close()
        for client in busy:
            client.close()
    log = worker.log_path.read_text()
    for old, new in ((1, 3), (2, 4)):
        assert f"closed connection {old}, the oldest without an open stream, to admit " \
               f"connection {new}" in log
    assert "refused connection 5: max_connections (2) reached" in log


def test_a_stalled_handshake_times_out(make_worker, loop):
    worker = _start(make_worker, loop, "--limit", "handshake_timeout=1")
    host, port = worker.target.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        raw.sendall(STALLED_RECORD)
        assert _closed_by_worker(raw) == b""
    assert _logged(worker, "refused connection 1: TLS handshake failed (ConnectionAbortedError)")
    c = worker.client("app1")  # the slot came back
    assert c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md,
                                  timeout=30).server_info


def test_the_silent_close_fault_closes_before_any_tls_byte(make_worker, loop, short_dir):
    worker = _start(make_worker, loop, "--fault-control-socket", str(short_dir / "faults"),
                    "--fault-silent-close", "1")
    host, port = worker.target.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        raw.sendall(H2_PREFACE)  # any bytes: none is answered
        assert _closed_by_worker(raw) == b""
    assert "closed connection 1 before the TLS handshake (fault)" in worker.log_path.read_text()
    c = worker.client("app1")  # the next connection is served
    assert c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md,
                                  timeout=30).server_info


def test_start_now_steps_at_once_and_then_behaves_as_a_task(loop):
    """The listener's eager start: first step inside the caller, then result, error, cancel."""

    async def body(log: list[object], fut: asyncio.Future[int]) -> int:
        log.append("first step")
        try:
            value = await fut
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        await asyncio.sleep(0)
        return value * 2

    async def failing() -> None:
        raise ValueError("refused")

    async def main() -> str:
        running = asyncio.get_running_loop()
        log: list[object] = []
        fut: asyncio.Future[int] = running.create_future()
        task = start_now(body(log, fut))
        assert log == ["first step"]  # before this coroutine yielded once
        running.call_soon(fut.set_result, 21)
        assert await task == 42
        log.clear()
        task = start_now(body(log, running.create_future()))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert log == ["first step", "cancelled"]
        with pytest.raises(ValueError, match="refused"):
            await start_now(failing())
        return type(running).__module__

    module = event_loop.run(loop, main())
    assert module.startswith("uvloop") == (loop == "uvloop")
