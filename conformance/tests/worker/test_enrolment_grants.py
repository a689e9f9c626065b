"""Enrolment from the command line grants exactly what was named (W3, W4).

An empty list of scopes, roles or tools grants none of them, repeated flags
grant one entry, and a revoked credential cannot be brought back by rotating it.
"""

from __future__ import annotations

import json

import grpc
import pytest
from cli_helpers import cli
from test_security import _enroll_cli

from conftest import expect_error, pb, script

S = pb.runs
OK = grpc.StatusCode


def test_an_enrolment_without_scopes_grants_no_call(make_worker):
    worker = make_worker(apps=(), start=False)
    out, bearer = _enroll_cli(worker, "--enroll-application", "bare", "--role", "default")
    assert out.returncode == 0, out.stderr
    worker.start()
    c = worker.client(bearer)
    meta = expect_error(lambda: c.create("one", "x"), OK.PERMISSION_DENIED, "SCOPE_MISSING")
    assert meta == {"scope": "runs:execute"}
    meta = expect_error(lambda: c.get("run_x"), OK.PERMISSION_DENIED, "SCOPE_MISSING")
    assert meta == {"scope": "runs:read"}


def test_an_enrolment_without_roles_or_tools_grants_none(make_worker):
    worker = make_worker(apps=(), start=False)
    out, no_role = _enroll_cli(worker, "--enroll-application", "no-role",
                               "--scope", "runs:execute", "--scope", "runs:read")
    assert out.returncode == 0, out.stderr
    out, no_tool = _enroll_cli(worker, "--enroll-application", "no-tool",
                               "--scope", "runs:execute", "--scope", "runs:read",
                               "--scope", "runs:execute", "--role", "default",
                               "--role", "default")
    assert out.returncode == 0, out.stderr
    worker.start()
    expect_error(lambda: worker.client(no_role).create("one", "x"),
                 OK.PERMISSION_DENIED, "ROLE_NOT_GRANTED")
    c = worker.client(no_tool)
    run = c.create("one", script("tool filesystem.read", "tool shell.run", "say done")).run
    final = c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    tool = [e.tool_activity.phase for e in c.watch(final.run_id) if e.HasField("tool_activity")]
    # No tool was granted, so none may run.
    assert tool == [S.TOOL_ACTIVITY_PHASE_FAILED, S.TOOL_ACTIVITY_PHASE_FAILED]
    worker.stop()
    listed = [json.loads(line) for line in _list(worker).splitlines()]
    assert sorted(row["application_id"] for row in listed) == ["no-role", "no-tool"]


def _list(worker) -> str:
    out = cli("credentials", "list", "--state-dir", str(worker.state), "--json")
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_revoked_credential_cannot_be_rotated_back(make_worker):
    worker = make_worker(apps=(), start=False)
    out, bearer = _enroll_cli(worker, "--enroll-application", "gone",
                              "--scope", "runs:read", "--role", "default")
    assert out.returncode == 0, out.stderr
    credential_id = json.loads(out.stdout)["credential_id"]
    revoked, _ = _enroll_cli(worker, "--revoke-credential", credential_id)
    assert revoked.returncode == 0, revoked.stderr
    rotated, new_bearer = _enroll_cli(worker, "--rotate-credential", credential_id)
    assert rotated.returncode == 2, rotated.stderr
    assert new_bearer == ""
    rows = [json.loads(line) for line in _list(worker).splitlines()]
    assert [(row["credential_id"], row["state"]) for row in rows] == [(credential_id, "revoked")]
    worker.start()
    expect_error(lambda: worker.client(bearer).get("run_x"), OK.UNAUTHENTICATED,
                 "CREDENTIAL_REVOKED")


@pytest.mark.parametrize(("flag", "value"), [("--role", ""), ("--role", "a b"),
                                             ("--tool", "x" * 65), ("--tool", "shell\nrun")])
@pytest.mark.parametrize("form", ["command", "flags"])
def test_a_malformed_role_or_tool_names_its_flag_and_the_grammar(tmp_path, flag, value, form):
    # The message used to say "invalid role or tool name", naming neither the flag nor
    # what a name may hold.
    public = tmp_path / "pub"
    action = ["enroll", "app9"] if form == "command" else ["--enroll-application", "app9"]
    out = cli(*action, "--public-api-dir", str(public), flag, value, "--bearer-fd", "1")
    assert out.returncode == 2, out.stderr
    assert f"{flag} expects a name of 1-64 characters of [A-Za-z0-9._:-]" in out.stderr
    assert repr(value) in out.stderr and out.stdout == ""
    assert not public.exists()
