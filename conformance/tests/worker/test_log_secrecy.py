"""Issue 11 (1): no bearer reaches the log, even at DEBUG.

A whole session runs at ``--log-level DEBUG``: CLI enrolment, serving, every
kind of call, wrong bearers, and a sidecar bootstrap. Every line either process
wrote is then searched for the bearer grammar itself, not only for the bearers
the test happens to know.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys

import grpc
from colossus_agent_client.api.v1alpha1 import run_service_pb2_grpc, system_pb2_grpc

from colossus_reference_worker.logsetup import redact

from conftest import Client, Worker, pb, script

WORKER = [sys.executable, "-m", "colossus_reference_worker.cli"]
# An issued bearer, or anything after the Bearer scheme name that is not the redaction mark.
LEAKS = re.compile(r"cb1_[A-Za-z0-9_-]{4,}|(?i:bearer)(?:\s|%20)+(?!\[redacted\])[\x21-\x7e]{8,}")
WRONG = ("cb1_" + "A" * 43, "x" * 40, "Zm9vYmFyYmF6cXV4" * 3)


def _enrol_with_cli(worker: Worker, app: str) -> tuple[str, str]:
    """CLI enrolment at DEBUG; returns (bearer, everything the command printed)."""
    read_end, write_end = os.pipe()
    proc = subprocess.run(
        [*WORKER, "--public-api-dir", str(worker.public), "--log-level", "DEBUG",
         "--enroll-application", app, "--scope", "runs:execute", "--scope", "runs:read",
         "--scope", "runs:control", "--role", "default", "--bearer-fd", str(write_end)],
        pass_fds=(write_end,), capture_output=True, timeout=60, check=True)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        bearer = pipe.read().strip()
    return bearer, proc.stdout.decode() + proc.stderr.decode()


def _sidecar_session(state_dir) -> tuple[str, str]:
    """Bootstrap a sidecar at DEBUG, make calls, stop it; returns (bearer, its stderr)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    proc = subprocess.Popen(
        [*WORKER, "--log-level", "DEBUG", "--sidecar", "--bootstrap-in-fd", str(in_r),
         "--bootstrap-out-fd", str(out_w)],
        pass_fds=(in_r, out_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    os.close(in_r)
    os.close(out_w)
    body = json.dumps({"version": 1, "state_dir": str(state_dir), "application_id": "side-app",
                       "grant": {"scopes": ["runs:execute", "runs:read"], "roles": ["default"],
                                 "tools": []}}).encode()
    os.write(in_w, struct.pack(">I", len(body)) + body)
    reply_bytes = b""
    while chunk := os.read(out_r, 65536):
        reply_bytes += chunk
    os.close(out_r)
    reply = json.loads(reply_bytes[4:])
    endpoint = reply["endpoint"].removeprefix("https://")
    channel = grpc.secure_channel(endpoint, grpc.ssl_channel_credentials(
        root_certificates=reply["certificate_pem"].encode()))
    c = Client(reply["bearer"], channel, run_service_pb2_grpc.RunServiceStub(channel),
               system_pb2_grpc.SystemServiceStub(channel))
    run_id = c.create("side-1", script("say hi")).run.run_id
    c.wait_status(run_id, pb.runs.RUN_STATUS_SUCCEEDED)
    channel.close()
    os.close(in_w)  # the parent goes away: the sidecar stops
    _, err = proc.communicate(timeout=30)
    return reply["bearer"], err.decode()


def test_a_debug_session_logs_no_bearer(make_worker, tmp_path):
    worker = make_worker("--log-level", "DEBUG", apps=(), start=False)
    bearer, admin_output = _enrol_with_cli(worker, "app1")
    worker.start()
    c = worker.client(bearer)
    run_id = c.create("k1", script("say hello", "sleep forever")).run.run_id
    c.get(run_id)
    c.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=c.md, timeout=10)
    c.cancel(run_id)
    assert [e.sequence for e in c.watch(run_id)]
    c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md, timeout=10)
    for wrong in WRONG:
        bad = worker.client(wrong)
        try:
            bad.get(run_id)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        else:
            raise AssertionError("a wrong bearer was accepted")
    worker.stop()
    side_state = tmp_path / "side"
    side_state.mkdir(mode=0o700)
    side_bearer, side_log = _sidecar_session(side_state)

    logs = {"enrolment": admin_output, "worker": worker.log_path.read_text(),
            "sidecar": side_log}
    assert "DEBUG colossus_reference_worker" in logs["worker"]  # the level took effect
    for name, text in logs.items():
        assert not LEAKS.findall(text), (name, LEAKS.findall(text)[:3])
        for secret in (bearer, side_bearer, *WRONG):
            assert secret not in text, name


def test_redaction_covers_every_bearer_shape():
    line = ("(b'authorization', b'Bearer cb1_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG') "
            "Authorization: bearer sekrit-sekrit-sekrit-sekrit-42 cb1_tail")
    out = redact(line)
    assert "cb1_a" not in out and "sekrit" not in out and "cb1_tail" not in out
    assert not LEAKS.findall(out)
