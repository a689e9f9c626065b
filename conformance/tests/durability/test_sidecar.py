"""W16: a Python parent bootstraps a sidecar over inherited pipes, no shell."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from worker_harness import WORKER, Client, error_reason, private_dir, script, system_pb2

REPLY_MEMBERS = {"version", "endpoint", "instance_id", "api_version", "certificate_sha256",
                 "certificate_pem", "credential_id", "bearer"}


def frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def read_reply(fd: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        assert time.monotonic() < deadline
    (n,) = struct.unpack(">I", buf[:4])
    assert n <= 65536 and len(buf) == 4 + n, "exactly one frame, then end-of-file"
    return json.loads(buf[4:])


class Sidecar:
    """Spawn the worker the way an SDK would: no shell, two inherited pipes."""

    def __init__(self, *extra: str) -> None:
        self.in_r, self.in_w = os.pipe()
        self.out_r, self.out_w = os.pipe()
        self.proc = subprocess.Popen(
            [*WORKER, "--sidecar", "--bootstrap-in-fd", str(self.in_r),
             "--bootstrap-out-fd", str(self.out_w), *extra],
            pass_fds=(self.in_r, self.out_w), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
        os.close(self.in_r)
        os.close(self.out_w)

    def send(self, payload: bytes) -> dict:
        os.write(self.in_w, payload)
        reply = read_reply(self.out_r)
        os.close(self.out_r)
        return reply

    def close_parent_end(self) -> None:
        os.close(self.in_w)

    def wait(self, timeout: float = 20) -> tuple[int, bytes]:
        _, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err


def request(state_dir, **over):
    obj = {"version": 1, "state_dir": str(state_dir), "application_id": "side-app",
           "grant": {"scopes": ["runs:execute", "runs:read"], "roles": ["default"],
                     "tools": []}}
    obj.update(over)
    return obj


def test_round_trip(tmp_path):
    state = private_dir(tmp_path / "state")
    side = Sidecar()
    reply = side.send(frame(request(state)))
    assert set(reply) == REPLY_MEMBERS, reply.get("error")
    assert reply["version"] == 1 and reply["api_version"] == "v1alpha1"
    assert re.fullmatch(r"https://127\.0\.0\.1:\d{1,5}", reply["endpoint"])
    assert re.fullmatch(r"cb1_[A-Za-z0-9_-]{43}", reply["bearer"])
    der = x509.load_pem_x509_certificate(reply["certificate_pem"].encode()).public_bytes(
        Encoding.DER)
    assert hashlib.sha256(der).hexdigest() == reply["certificate_sha256"]
    # No discovery files, and the bearer is nowhere on disk, in argv or in the logs.
    on_disk = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert reply["bearer"].encode() not in on_disk
    assert not list(tmp_path.rglob("endpoint.json"))
    proc_dir = Path(f"/proc/{side.proc.pid}")
    cmdline = (proc_dir / "cmdline").read_bytes()
    environ = (proc_dir / "environ").read_bytes()
    assert reply["bearer"].encode() not in cmdline + environ

    with Client(reply["endpoint"], reply["certificate_pem"].encode(), reply["bearer"]) as c:
        info = c.server_info()
        assert info.deployment_mode == system_pb2.DEPLOYMENT_MODE_SIDECAR
        assert info.instance_id == reply["instance_id"]
        run = c.create("side-1", script("say hello from a sidecar")).run
        assert c.wait_status(run.run_id, {5}).result.output_text == "hello from a sidecar"
        # The grant is exact: no runs:control scope was asked for.
        with pytest.raises(grpc.RpcError) as info_err:
            c.cancel(run.run_id)
        assert error_reason(info_err.value) == (grpc.StatusCode.PERMISSION_DENIED,
                                                "SCOPE_MISSING")

    side.close_parent_end()  # the parent is gone: the worker stops
    code, err = side.wait()
    assert code == 0
    assert reply["bearer"].encode() not in err


def test_restart_keeps_identity_and_issues_a_new_bearer(tmp_path):
    state = private_dir(tmp_path / "state")
    first = Sidecar()
    one = first.send(frame(request(state)))
    first.close_parent_end()
    assert first.wait()[0] == 0
    second = Sidecar()
    two = second.send(frame(request(state)))
    try:
        assert two["instance_id"] == one["instance_id"]
        assert two["certificate_sha256"] == one["certificate_sha256"]
        assert two["bearer"] != one["bearer"]
        with Client(two["endpoint"], two["certificate_pem"].encode(), one["bearer"]) as old:
            with pytest.raises(grpc.RpcError) as info:
                old.server_info()
            assert error_reason(info.value)[1] == "CREDENTIAL_REVOKED"
    finally:
        second.close_parent_end()
        assert second.wait()[0] == 0


def test_parent_death_signal_stops_the_worker(tmp_path):
    """SIGKILL the parent (a shell-less Python middleman) while it holds the pipe."""
    state = private_dir(tmp_path / "state")
    parent_code = f"""
import os, subprocess, sys, json, struct, time
r, w = os.pipe(); r2, w2 = os.pipe()
p = subprocess.Popen({WORKER!r} + ["--sidecar", "--bootstrap-in-fd", str(r),
                     "--bootstrap-out-fd", str(w2)], pass_fds=(r, w2))
os.close(r); os.close(w2)
body = json.dumps({json.dumps(request(state))}).encode()
os.write(w, struct.pack(">I", len(body)) + body)
while os.read(r2, 65536):
    pass
# Leak the write end to a grandchild that outlives us, so only PDEATHSIG can stop the worker.
# (The PIDs are printed only once the grandchild holds it: killed earlier, the parent
# would close the last write end and end-of-file alone would stop the worker.)
holder = subprocess.Popen(["sleep", "60"], pass_fds=(w,))
print(p.pid, holder.pid, flush=True)
time.sleep(60)
"""
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE)
    worker_pid, holder_pid = map(int, parent.stdout.readline().split())
    parent.kill()
    parent.wait()
    try:
        _wait_until_gone(worker_pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(holder_pid, 9)


def _wait_until_gone(worker_pid: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(worker_pid, 0)
            with open(f"/proc/{worker_pid}/stat") as f:
                if f.read().split()[2] == "Z":
                    break
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.05)
    else:
        os.kill(worker_pid, 9)
        pytest.fail("the sidecar outlived its parent")


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"\x00\x00\x00\x05hello", "bootstrap_invalid"),
        (struct.pack(">I", 70_000), "bootstrap_too_large"),
        (frame({"version": 3}), "version_unsupported"),
        (None, "bootstrap_invalid"),  # unknown member
        ("loose", "state_dir_invalid"),
        ("scope", "grant_invalid"),
        ("workspace", "boundary_unsupported"),
    ],
)
def test_bad_bootstrap_is_refused_with_an_error_reply(tmp_path, payload, code):
    state = private_dir(tmp_path / "state")
    if payload is None:
        payload = frame({**request(state), "extra": True})
    elif payload == "loose":
        os.chmod(state, 0o750)
        payload = frame(request(state))
    elif payload == "scope":
        payload = frame(request(state, grant={"scopes": ["root"], "roles": [], "tools": []}))
    elif payload == "workspace":
        payload = frame({**request(state), "version": 2, "execution_boundary": "workspace_isolated"})
    side = Sidecar()
    reply = side.send(payload)
    assert set(reply) == {"version", "error"}
    assert reply["error"]["code"] == code
    side.close_parent_end()
    assert side.wait()[0] != 0


def test_truncated_bootstrap(tmp_path):
    side = Sidecar()
    os.write(side.in_w, b"\x00\x00\x01\x00{")
    side.close_parent_end()
    reply = read_reply(side.out_r)
    os.close(side.out_r)
    assert reply["error"]["code"] == "bootstrap_truncated"
    assert side.wait()[0] != 0


def test_second_sidecar_on_the_same_state_is_refused(tmp_path):
    state = private_dir(tmp_path / "state")
    first = Sidecar()
    assert "bearer" in first.send(frame(request(state)))
    second = Sidecar()
    try:
        reply = second.send(frame(request(state)))
        assert reply["error"]["code"] == "state_locked"
        second.close_parent_end()
        assert second.wait()[0] != 0
    finally:
        first.close_parent_end()
        assert first.wait()[0] == 0


def test_sidecar_refuses_daemon_flags(tmp_path):
    side = Sidecar("--public-api-dir", str(private_dir(tmp_path / "pub")))
    reply = read_reply(side.out_r)
    os.close(side.out_r)
    assert reply["error"]["code"] == "bootstrap_invalid"
    side.close_parent_end()
    assert side.wait()[0] == 2
    assert not (tmp_path / "pub" / "endpoint.json").exists()


def test_a_state_dir_that_lost_a_secret_is_refused_and_the_log_says_which(tmp_path):
    # A sidecar restarted on its folder after its verifier key went missing must not
    # mint a new key (every credential of the folder would fail): it refuses, and the
    # parent's copy of its log names the missing file, while the reply carries only the code.
    state = private_dir(tmp_path / "state")
    first = Sidecar()
    assert "bearer" in first.send(frame(request(state)))
    first.close_parent_end()
    assert first.wait()[0] == 0
    (state / "verifier-key").unlink()
    second = Sidecar()
    reply = second.send(frame(request(state)))
    assert reply["error"]["code"] == "state_dir_invalid"
    assert "verifier-key" not in json.dumps(reply)
    second.close_parent_end()
    code, err = second.wait()
    assert code != 0 and str(state / "verifier-key") in err.decode()
    assert not (state / "verifier-key").exists()
