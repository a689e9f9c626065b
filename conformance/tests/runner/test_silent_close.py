"""The silent_close fault: a listener that drops connections before any TLS byte.

The ``silent-close.*`` cases rely on the worker closing exactly the case's next N
connections without sending anything, then serving the genuine TLS 1.3 listener
again; these tests hold the fault to that against a real worker.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from colossus_conformance.worker import ManagedWorker
from colossus_reference_worker.faults.hooks import FaultState
from colossus_reference_worker.faults.plan import FaultSpecError, parse_plan


def test_silent_close_parses_with_a_default_count_of_one():
    assert parse_plan([{"kind": "silent_close"}]).silent_closes == 1
    assert parse_plan([{"kind": "silent_close", "count": 3}]).silent_closes == 3


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "silent_close", "count": 0},
        {"kind": "silent_close", "count": 65},
        {"kind": "silent_close", "count": "2"},
        {"kind": "silent_close", "count": True},
        {"kind": "silent_close", "watch": 1},
    ],
)
def test_bad_silent_close_is_refused(fault):
    with pytest.raises(FaultSpecError):
        parse_plan([fault])


def test_fault_state_drops_exactly_count_connections_and_counts_them():
    state = FaultState()
    state.begin("c", parse_plan([{"kind": "silent_close", "count": 2}]))
    assert [state.take_silent_close() for _ in range(4)] == [True, True, False, False]
    assert state.observations.snapshot()["silent_closes"] == 2
    state.begin("next", parse_plan([]))
    assert state.take_silent_close() is False
    assert state.observations.snapshot()["silent_closes"] == 0


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedWorker]:
    scratch = tmp_path_factory.mktemp("silent-scratch")
    managed = ManagedWorker("daemon", scratch, scratch)
    managed.start()
    try:
        yield managed
    finally:
        managed.stop()


def _address(worker: ManagedWorker) -> tuple[str, int]:
    host, _, port = worker.endpoint.removeprefix("https://").rpartition(":")
    return host.strip("[]"), int(port)


def _first_bytes(worker: ManagedWorker) -> bytes:
    """What the listener sends on a fresh connection before closing it (b"" when nothing)."""
    with socket.create_connection(_address(worker), timeout=30) as sock:
        try:
            return sock.recv(1)
        except ConnectionResetError:
            return b""


def _tls_version(worker: ManagedWorker) -> str | None:
    host, port = _address(worker)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=Path(worker.public_api_dir, "certificate.pem").read_text())
    with (
        socket.create_connection((host, port), timeout=30) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        return tls.version()


def test_listener_drops_the_next_connections_silently_then_serves(worker):
    assert worker.control is not None
    worker.control.begin_case("silent", [{"kind": "silent_close", "count": 2}])
    try:
        assert _first_bytes(worker) == b""
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _tls_version(worker)
        assert _tls_version(worker) == "TLSv1.3"
        observed = worker.control.observations()
    finally:
        worker.control.end_case()
    assert observed["silent_closes"] == 2
    assert [c["handshake_completed"] for c in observed["connections"]][:2] == [False, False]


def test_without_the_fault_the_first_connection_completes_tls(worker):
    assert worker.control is not None
    worker.control.begin_case("control", [])
    try:
        assert _tls_version(worker) == "TLSv1.3"
        observed = worker.control.observations()
    finally:
        worker.control.end_case()
    assert observed["silent_closes"] == 0
