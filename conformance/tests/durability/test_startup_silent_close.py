"""``--fault-silent-close N``: a worker that drops its first connections from start-up (W15).

The ``silent-close.*`` restart cases need the drop in place before the runner can arm
anything: an SDK reconnects the moment the restarted worker listens. These tests hold
the flag to exactly N silent drops, kept across the re-arming that follows a restart
(``begin_case`` with ``keep_observations``) and gone at the next case.
"""

from __future__ import annotations

import socket
import ssl
import subprocess

import pytest
from worker_harness import WORKER, FaultControl, Worker, private_dir

from colossus_reference_worker.faults.hooks import FaultState
from colossus_reference_worker.faults.plan import parse_plan


def _silently_closed(worker: Worker) -> bool:
    """True when the listener closed a fresh connection without sending a byte."""
    with socket.create_connection(worker.address, timeout=30) as sock:
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True


def _tls_version(worker: Worker) -> str | None:
    host, _ = worker.address
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=worker.certificate_pem.decode())
    with (
        socket.create_connection(worker.address, timeout=30) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        return tls.version()


def test_first_n_connections_after_start_are_dropped_even_before_a_case(short_tmp):
    pub = private_dir(short_tmp / "pub-startup-silent")
    sock_path = short_tmp / "ss.sock"
    worker = Worker.start(pub, "--fault-control-socket", str(sock_path), "--fault-silent-close", "2")
    control = FaultControl(sock_path)
    try:
        # Nothing armed yet: the start-up drops apply all the same.
        assert _silently_closed(worker)
        # The runner re-arms a restarted worker keeping what it saw: one drop is left.
        control.send({"op": "begin_case", "case": "restart", "faults": [], "keep_observations": True})
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _tls_version(worker)
        assert _tls_version(worker) == "TLSv1.3"
        assert control.observations()["silent_closes"] == 2
    finally:
        control.close()
        worker.terminate()


def test_a_fresh_case_or_end_case_disarms_the_startup_drops():
    state = FaultState()
    state.startup_silent_closes = 3
    state.begin("restarted", parse_plan([]), keep_observations=True)
    assert state.take_silent_close() is True
    state.begin("next case", parse_plan([]))
    assert state.take_silent_close() is False
    state.startup_silent_closes = 2
    state.end()
    assert state.take_silent_close() is False


def test_startup_drops_come_before_the_case_plan_and_both_count():
    state = FaultState()
    state.startup_silent_closes = 1
    state.begin("restarted", parse_plan([{"kind": "silent_close", "count": 1}]), keep_observations=True)
    assert [state.take_silent_close() for _ in range(3)] == [True, True, False]
    assert state.observations.snapshot()["silent_closes"] == 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--fault-silent-close", "1"], b"--fault-control-socket"),
        (["--fault-control-socket", "{sock}", "--fault-silent-close", "0"], b"--fault-silent-close"),
        (["--fault-control-socket", "{sock}", "--fault-silent-close", "65"], b"--fault-silent-close"),
    ],
)
def test_bad_startup_silent_close_is_refused(short_tmp, extra, message):
    pub = private_dir(short_tmp / "pub-bad-silent")
    sock_path = short_tmp / "bad.sock"
    argv = [a.replace("{sock}", str(sock_path)) for a in extra]
    proc = subprocess.run([*WORKER, "--public-api-dir", str(pub), *argv],
                          capture_output=True, timeout=30, check=False)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not sock_path.exists()
