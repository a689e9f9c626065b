"""``serve`` and ``enroll`` from the command line: advertised limit names, enrolment that
refuses what serving refuses, and INFO logs a person (or a machine) can follow (issue 13)."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import grpc
import pytest
from cli_helpers import CLI, cli

from colossus_reference_worker.config import ADVERTISED_LIMITS

from conftest import Worker, enroll_direct, pb, script

S = pb.runs


def _advertised_paths() -> set[str]:
    """Every scalar field path of ServerInfo.limits, from the contract itself."""
    paths = set()
    for field in pb.sys.Limits.DESCRIPTOR.fields:
        message = field.message_type
        if message is not None and message.full_name.endswith("TokenBucket"):
            paths |= {f"{field.name}.{sub.name}" for sub in message.fields}
        else:
            paths.add(field.name)
    return paths


def test_limit_names_are_exactly_the_advertised_ones():
    assert set(ADVERTISED_LIMITS) == _advertised_paths()


def test_limit_overrides_by_advertised_name_are_advertised(make_worker):
    worker = make_worker("--limit", "create_rate.burst=7", "--limit", "handshake_timeout=3s",
                         "--limit", "create_rate_per_application.refill_per_second=2",
                         "--limit", "max_active_runs=5")
    c = worker.client("app1")
    limits = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(),
                                    metadata=c.md).server_info.limits
    assert limits.create_rate.burst == 7
    assert limits.create_rate_per_application.refill_per_second == 2
    assert limits.handshake_timeout.seconds == 3
    assert limits.max_active_runs == 5


@pytest.mark.parametrize(("item", "expected"), [
    ("create_rate_burst_typo=1", "unknown limit 'create_rate_burst_typo'"),
    ("max_active_runs=many", "expects an integer, got 'many'"),
    # Values GetServerInfo cannot carry: it advertised 0 for this one, and every
    # GetServerInfo failed INTERNAL for the duration.
    ("max_active_runs=4294967296", "must be from 1 to 4294967295, got '4294967296'"),
    ("handshake_timeout=1e308", "must be from 0 to 315576000000, got '1e308'"),
    # The contract refuses max_turns above 100; closing a run needs 3 reserved events.
    ("max_turns=101", "'max_turns' must be from 1 to 100, got '101'"),
    ("reserved_lifecycle_events=2", "must be from 3 to 4294967295, got '2'"),
    ("handshake_timeout=-1", "must be positive"),
    ("max_turns", "expects NAME=VALUE"),
])
def test_bad_limits_name_the_value_and_the_valid_names(tmp_path, item, expected):
    public = tmp_path / "pub"
    out = cli("serve", "--public-api-dir", str(public), "--limit", item)
    assert out.returncode == 2, out.stderr
    assert expected in out.stderr and out.stderr.count("\n") == 1
    if "unknown" in expected:
        assert all(name in out.stderr for name in ADVERTISED_LIMITS)
    assert not public.exists()


@pytest.mark.parametrize("form", ["command", "flags"])
def test_enrolment_refuses_a_folder_serving_would_refuse(tmp_path, form):
    public = tmp_path / "pub"
    public.mkdir(mode=0o755)
    public.chmod(0o755)
    grant = ["--scope", "runs:read", "--bearer-fd", "1"]
    if form == "command":
        enrol = cli("enroll", "app", "--public-api-dir", str(public), *grant)
    else:
        enrol = cli("--public-api-dir", str(public), "--enroll-application", "app", *grant)
    serve = cli("serve", "--public-api-dir", str(public))
    assert (enrol.returncode, serve.returncode) == (4, 4)
    assert enrol.stderr == serve.stderr and f"mode 0700: {public}" in enrol.stderr
    assert list(public.iterdir()) == []  # nothing issued, no state folder made


def _serve(root: Path, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    public = root / "pub"
    log_path = root / "serve.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([*CLI, "serve", "--public-api-dir", str(public), *extra],
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 20
    while not (public / "endpoint.json").exists():
        assert proc.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc, log_path


def _activity(root: Path, bearer: str) -> str:
    """A finished run, a refused bearer and a refused connection."""
    worker = Worker(root)
    worker.bearers["app1"] = bearer
    client = worker.client("app1")
    run_id = client.create("k", script("say hi")).run.run_id
    client.wait_status(run_id, S.RUN_STATUS_SUCCEEDED)
    stranger = worker.client("cb1_" + "x" * 43)
    with pytest.raises(grpc.RpcError):
        stranger.get(run_id)
    host, port = worker.target.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection((host, int(port))) as raw, pytest.raises(ssl.SSLError):
        ctx.wrap_socket(raw)
    worker._close_channels()
    return run_id


def _wait_for(log_path: Path, needle: str) -> None:
    """Until the worker has logged ``needle`` (it logs after answering the client)."""
    deadline = time.monotonic() + 20
    while needle not in log_path.read_text():
        assert time.monotonic() < deadline, log_path.read_text()
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(20)


def test_serve_logs_at_info_by_default(tmp_path):
    tmp_path.chmod(0o700)
    (tmp_path / "pub").mkdir(mode=0o700)
    _, bearer = enroll_direct(tmp_path / "pub" / "state", "app1")
    proc, log_path = _serve(tmp_path)
    try:
        run_id = _activity(tmp_path, bearer)
        _wait_for(log_path, "refused connection")
    finally:
        _stop(proc)
    text = log_path.read_text()
    assert "serving https://127.0.0.1:" in text
    assert f"state folder {tmp_path / 'pub' / 'state'}" in text
    assert f"run {run_id} created for app1" in text
    assert f"run {run_id} of app1 finished SUCCEEDED: 3 events in " in text
    assert "refused RunService/GetRun: CREDENTIAL_INVALID" in text
    assert "refused connection" in text and "TLS handshake failed" in text
    assert bearer not in text and "x" * 43 not in text


def test_serve_logs_json_lines(tmp_path):
    tmp_path.chmod(0o700)
    (tmp_path / "pub").mkdir(mode=0o700)
    _, bearer = enroll_direct(tmp_path / "pub" / "state", "app1")
    proc, log_path = _serve(tmp_path, "--log-format", "json")
    try:
        run_id = _activity(tmp_path, bearer)
        _wait_for(log_path, "connection_refused")
    finally:
        _stop(proc)
    entries = [json.loads(line) for line in log_path.read_text().splitlines()]
    by_event = {e.get("event"): e for e in entries}
    assert by_event["serving"]["instance_id"].startswith("wkr_")
    assert by_event["serving"]["state_dir"] == str(tmp_path / "pub" / "state")
    finished = by_event["run_finished"]
    assert (finished["run_id"], finished["application_id"], finished["status"],
            finished["events"]) == (run_id, "app1", "SUCCEEDED", 3)
    assert finished["duration_seconds"] >= 0
    assert by_event["credential_refused"]["reason"] == "CREDENTIAL_INVALID"
    assert by_event["connection_refused"]["reason"] == "tls"
    assert all({"time", "level", "logger", "message"} <= set(e) for e in entries)
    assert bearer not in log_path.read_text()


@pytest.mark.parametrize("argv", [["serve"], ["dev"], []], ids=["serve", "dev", "flags"])
@pytest.mark.parametrize("port", ["70000", "-1", "x1"])
def test_a_port_out_of_range_is_a_usage_error_naming_the_flag(tmp_path, argv, port):
    public = tmp_path / "pub"
    out = cli(*argv, "--public-api-dir", str(public), "--port", port)
    assert out.returncode == 2, out.stderr  # was an "unexpected failure (OverflowError)"
    assert "--port" in out.stderr and "0 (any free port) to 65535" in out.stderr
    assert repr(port) in out.stderr and out.stderr.count("\n") == 1
    assert not public.exists()


def test_a_port_already_taken_is_named_and_leaves_the_folder_usable(make_worker):
    worker = make_worker(start=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = cli("serve", "--public-api-dir", str(worker.public), "--port", str(port))
    assert out.returncode == 1, out.stderr  # was "unexpected failure (OSError)"
    assert f"port {port}" in out.stderr and "--port" in out.stderr
    assert "unexpected" not in out.stderr and out.stderr.count("\n") == 1
    assert not (worker.public / "endpoint.json").exists()
    worker.start()  # nothing was left locked or half-published
    assert worker.client("app1").create("k", "x").run.run_id


@pytest.mark.parametrize("content", [b"70000", b"0", "\u00b2".encode(), b"\xff\xfe", b"80x"])
def test_a_damaged_last_port_file_is_ignored(make_worker, content):
    # The port of the previous run is only a preference; a damaged file used to stop
    # every start with "unexpected failure" (OverflowError, ValueError, UnicodeDecodeError).
    worker = make_worker(start=False)
    worker.start()
    worker.stop()
    last_port = worker.state / "last-port"
    last_port.write_bytes(content)
    worker.start()
    assert worker.client("app1").create("k", "x").run.run_id


def test_a_default_max_turns_above_max_turns_is_refused(tmp_path):
    public = tmp_path / "pub"
    out = cli("serve", "--public-api-dir", str(public), "--limit", "max_turns=10")
    assert out.returncode == 2, out.stderr  # the default (20) would exceed the maximum
    assert "'default_max_turns' (20) must not exceed 'max_turns' (10)" in out.stderr
    assert not public.exists()


def test_the_largest_values_are_advertised_exactly(make_worker):
    worker = make_worker("--limit", "max_active_runs=4294967295", "--limit",
                         "max_connection_age=315576000000", "--limit", "max_turns=100")
    c = worker.client("app1")
    limits = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md,
                                    timeout=10).server_info.limits
    assert limits.max_active_runs == 4294967295 and limits.max_turns == 100
    assert limits.max_connection_age.seconds == 315576000000
