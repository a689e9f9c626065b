"""Each RPC checks its own scope (W4), one credential short of exactly that scope at a time.

A planted scope table that let GetRun, WatchRun, ListRuns or an artifact call through
without its scope, or asked CancelRun for the wrong one, survived the suite: it only
tried a read-only credential on writes. Here every credential holds every scope but the
one the call needs, and owns the run it asks about, so only the scope check can refuse.
"""

from __future__ import annotations

import uuid

import grpc
import pytest
from colossus_agent_client.api.v1alpha1 import artifacts_pb2, artifacts_pb2_grpc

from conftest import ALL_SCOPES, Worker, expect_error, pb

S = pb.runs
OK = grpc.StatusCode


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """app1 with every scope, and a credential of app1 per scope holding all but that one."""
    root = tmp_path_factory.mktemp("scopes")
    root.chmod(0o700)
    worker = Worker(root, ())
    worker.public.mkdir(mode=0o700)
    worker.enroll("app1")
    for scope in ALL_SCOPES:
        worker.enroll("app1", label=f"no-{scope}",
                      scopes=tuple(s for s in ALL_SCOPES if s != scope))
    worker.start()
    yield worker
    worker.stop()


def lacking(worker, scope):
    return worker.client(f"no-{scope}")


def _refused(call, scope):
    assert expect_error(call, OK.PERMISSION_DENIED, "SCOPE_MISSING") == {"scope": scope}


def test_run_calls_need_their_own_scope(worker):
    run = worker.client("app1").create(uuid.uuid4().hex, "x").run
    _refused(lambda: lacking(worker, "runs:execute").create(uuid.uuid4().hex, "x"),
             "runs:execute")
    c = lacking(worker, "runs:read")
    _refused(lambda: c.get(run.run_id), "runs:read")
    _refused(lambda: c.watch(run.run_id), "runs:read")
    _refused(lambda: c.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=c.md), "runs:read")
    c = lacking(worker, "runs:control")
    _refused(lambda: c.cancel(run.run_id), "runs:control")
    # Each of those credentials still does what its other scopes allow.
    assert lacking(worker, "runs:read").cancel(run.run_id).run_id == run.run_id
    assert lacking(worker, "runs:control").get(run.run_id).run_id == run.run_id


def test_artifact_calls_need_their_own_scope(worker):
    def stub(scope):
        c = lacking(worker, scope)
        return artifacts_pb2_grpc.ArtifactServiceStub(c.channel), c.md

    upload, md = stub("artifacts:write")
    _refused(lambda: upload.UploadArtifact(iter([artifacts_pb2.UploadArtifactRequest()]),
                                           metadata=md, timeout=10), "artifacts:write")
    download, md = stub("artifacts:read")
    _refused(lambda: list(download.DownloadArtifact(
        artifacts_pb2.DownloadArtifactRequest(artifact_id="art_missing"), metadata=md,
        timeout=10)), "artifacts:read")


def test_a_run_uses_only_the_tools_its_credential_grants(make_worker):
    # W4/W14: the grant captured at acceptance decides the tools. With one tool granted,
    # another tool the worker knows fails its activity (a planted runtime that allowed
    # every known tool survived: the other tests' applications were granted them all).
    worker = make_worker(tools=("filesystem.read",))
    c = worker.client("app1")
    run = c.create(uuid.uuid4().hex, "colossus-script v1\ntool shell.run\ntool filesystem.read").run
    c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    phases = [e.tool_activity.phase for e in c.watch(run.run_id) if e.HasField("tool_activity")]
    assert phases[0] == S.TOOL_ACTIVITY_PHASE_FAILED
    assert phases[-1] == S.TOOL_ACTIVITY_PHASE_COMPLETED
    assert S.TOOL_ACTIVITY_PHASE_COMPLETED not in phases[:-1]
