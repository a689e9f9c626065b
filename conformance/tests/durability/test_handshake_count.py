"""The fault-control count of handshakes still in progress (W15).

The conformance runner waits on this count, instead of a fixed pause, before it reads a
case's handshake records: it must count a connection from its TCP accept until the worker
has recorded how its handshake ended, whichever way it ended.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from worker_harness import FaultControl, Worker, private_dir

_BOUND_SECONDS = 20.0


@pytest.fixture(scope="module")
def faulty(short_tmp: Path) -> Iterator[SimpleNamespace]:
    """A worker with fault control whose handshake timeout outlasts any test step.

    A silent connection must stay in its handshake for as long as a test needs it to.
    """
    pub = private_dir(short_tmp / "pub-handshakes")
    sock = short_tmp / "hs.sock"
    worker = Worker.start(pub, "--fault-control-socket", str(sock),
                          "--limit", "handshake_timeout=120")
    control = FaultControl(sock)
    try:
        yield SimpleNamespace(worker=worker, control=control)
    finally:
        control.close()
        worker.terminate()


def _in_progress(faulty) -> int:
    reply = faulty.control.send({"op": "handshakes"})
    assert reply["ok"], reply
    count: int = reply["in_progress"]
    return count


def _settles_at(faulty, expected: int) -> int:
    """Polls the count until it equals ``expected`` or the bound runs out; returns the last."""
    deadline = time.monotonic() + _BOUND_SECONDS
    while (count := _in_progress(faulty)) != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return count


def test_a_connection_counts_from_accept_until_its_handshake_is_recorded(faulty):
    faulty.control.begin("handshake-count")
    try:
        assert _settles_at(faulty, 0) == 0
        silent = socket.create_connection(faulty.worker.address, timeout=30)
        try:
            # Accepted, not a byte of TLS yet: in progress, and not recorded.
            assert _settles_at(faulty, 1) == 1
            assert faulty.control.observations()["connections"] == []

            context = ssl.create_default_context(cadata=faulty.worker.certificate_pem.decode())
            context.check_hostname = False
            with socket.create_connection(faulty.worker.address, timeout=30) as raw, \
                    context.wrap_socket(raw) as tls:
                assert tls.version() == "TLSv1.3"
                # The finished handshake leaves the count; the silent one stays in it.
                assert _settles_at(faulty, 1) == 1
        finally:
            silent.close()
        # A peer gone before saying a word ends its handshake too, and is recorded as failed.
        assert _settles_at(faulty, 0) == 0
        connections = faulty.control.observations()["connections"]
        assert sorted(c["handshake_completed"] for c in connections) == [False, True]
    finally:
        faulty.control.end()


def test_the_count_is_not_reset_by_a_new_case(faulty):
    silent = socket.create_connection(faulty.worker.address, timeout=30)
    try:
        assert _settles_at(faulty, 1) == 1
        faulty.control.begin("handshake-count-across-cases")
        assert _in_progress(faulty) == 1
        faulty.control.end()
    finally:
        silent.close()
    assert _settles_at(faulty, 0) == 0
