"""W15: every fault kind and every observation, seen from a raw grpcio client."""

from __future__ import annotations

import os
import stat
import time

import grpc
import pytest
from worker_harness import error_reason, script, system_pb2

DONE = 5  # RUN_STATUS_SUCCEEDED


@pytest.fixture(scope="module")
def finished_run(faulty):
    """A SUCCEEDED run with a dozen events to watch over and over."""
    with faulty.worker.client(faulty.bearer) as c:
        run = c.create("faults-base", script(*["say part"] * 10)).run
        run = c.wait_status(run.run_id, {DONE})
        assert run.last_sequence >= 10
        return run


@pytest.fixture
def case(faulty, request):
    def begin(faults):
        faulty.control.begin(request.node.name, faults)
        return faulty.control
    yield begin
    faulty.control.end()


def watch_all(client, run_id, after=0):
    """(events, error) of one watch: every event received, then the error or None."""
    events = []
    try:
        for item in client.watch(run_id, after):
            events.append(item.event)
    except grpc.RpcError as err:
        return events, err
    return events, None


def seqs(events):
    return [e.sequence for e in events]


def test_socket_is_private_and_protocol_refuses_junk(faulty):
    mode = os.stat(faulty.socket_path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    ctl = faulty.control
    assert ctl.send({"op": "nope"})["ok"] is False
    bad = ctl.send({"op": "begin_case", "case": "x", "faults": [{"kind": "teleport"}]})
    assert bad["ok"] is False and "teleport" in bad["error"]
    assert ctl.send({"op": "begin_case", "case": "x",
                     "faults": [{"kind": "skip"}]})["ok"] is False
    assert ctl.send({"op": "ping"})["ok"] is True


def test_healthy_watch_without_faults(faulty, finished_run, case):
    case([])
    with faulty.worker.client(faulty.bearer) as c:
        events, err = watch_all(c, finished_run.run_id)
    assert err is None
    assert seqs(events) == list(range(1, finished_run.last_sequence + 1))


def test_replay_repeats_byte_identical_events(faulty, finished_run, case):
    case([{"kind": "replay", "after_sequence": 4, "count": 2}])
    with faulty.worker.client(faulty.bearer) as c:
        events, err = watch_all(c, finished_run.run_id)
    assert err is None
    assert seqs(events)[:7] == [1, 2, 3, 4, 3, 4, 5]
    assert events[4].SerializeToString() == events[2].SerializeToString()
    assert events[5].SerializeToString() == events[3].SerializeToString()


def test_replay_altered_changes_content_not_identity(faulty, finished_run, case):
    case([{"kind": "replay_altered", "after_sequence": 3}])
    with faulty.worker.client(faulty.bearer) as c:
        events, _ = watch_all(c, finished_run.run_id)
    assert seqs(events)[:5] == [1, 2, 3, 3, 4]
    assert events[3].run_id == events[2].run_id
    assert events[3].SerializeToString() != events[2].SerializeToString()


def test_skip_leaves_a_gap(faulty, finished_run, case):
    case([{"kind": "skip", "sequence": 3}])
    with faulty.worker.client(faulty.bearer) as c:
        events, err = watch_all(c, finished_run.run_id)
    assert err is None
    assert 3 not in seqs(events) and seqs(events)[:3] == [1, 2, 4]


def test_clean_close_before_terminal(faulty, finished_run, case):
    case([{"kind": "clean_close", "after_sequence": 2}])
    with faulty.worker.client(faulty.bearer) as c:
        events, err = watch_all(c, finished_run.run_id)
    assert err is None and seqs(events) == [1, 2]


@pytest.mark.parametrize("after", [0, 3])
def test_fail_with_retryable_error(faulty, finished_run, case, after):
    case([{"kind": "fail", "after_sequence": after, "code": "UNAVAILABLE"}])
    with faulty.worker.client(faulty.bearer) as c:
        events, err = watch_all(c, finished_run.run_id)
    assert seqs(events) == list(range(1, after + 1))
    assert err is not None
    assert error_reason(err) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")


def test_fail_with_named_reason(faulty, finished_run, case):
    case([{"kind": "fail", "after_sequence": 1, "code": "DATA_LOSS",
           "reason": "JOURNAL_INTEGRITY"}])
    with faulty.worker.client(faulty.bearer) as c:
        _, err = watch_all(c, finished_run.run_id)
    assert error_reason(err) == (grpc.StatusCode.DATA_LOSS, "JOURNAL_INTEGRITY")


def test_stall_pauses_without_closing(faulty, finished_run, case):
    case([{"kind": "stall", "after_sequence": 1, "seconds": 1.0}])
    with faulty.worker.client(faulty.bearer) as c:
        stream = c.watch(finished_run.run_id)
        first = next(stream)
        t0 = time.monotonic()
        second = next(stream)
        waited = time.monotonic() - t0
        stream.cancel()
    assert (first.event.sequence, second.event.sequence) == (1, 2)
    assert waited >= 0.9


def test_faults_target_the_named_watch_only(faulty, finished_run, case):
    case([{"kind": "clean_close", "after_sequence": 1, "watch": 2}])
    with faulty.worker.client(faulty.bearer) as c:
        first, _ = watch_all(c, finished_run.run_id)
        second, _ = watch_all(c, finished_run.run_id, after=0)
        third, _ = watch_all(c, finished_run.run_id, after=5)
    assert seqs(first) == list(range(1, finished_run.last_sequence + 1))
    assert seqs(second) == [1]
    assert seqs(third)[0] == 6
    obs = faulty.control.observations()
    assert obs["watch_cursors"] == [0, 0, 5]


def test_rpc_fail_before_commit_does_nothing(faulty, case):
    case([{"kind": "rpc_fail", "rpc": "CreateRun", "code": "UNAVAILABLE"}])
    with faulty.worker.client(faulty.bearer) as c:
        with pytest.raises(grpc.RpcError) as info:
            c.create("rpc-fail-before", script("say hi"))
        assert error_reason(info.value) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
        again = c.create("rpc-fail-before", script("say hi"))
    assert again.replayed is False  # the failed call stored nothing


def test_rpc_fail_after_commit_leaves_outcome_unknown_but_durable(faulty, case):
    case([{"kind": "rpc_fail", "rpc": "RunService/CreateRun", "code": "UNAVAILABLE",
           "after_commit": True, "count": 1}])
    with faulty.worker.client(faulty.bearer) as c:
        with pytest.raises(grpc.RpcError) as info:
            c.create("rpc-fail-after", script("say hi"))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        again = c.create("rpc-fail-after", script("say hi"))
    assert again.replayed is True  # the work was done before the failure


def test_rpc_fail_count_and_other_methods(faulty, finished_run, case):
    case([{"kind": "rpc_fail", "rpc": "GetRun", "code": "INTERNAL", "count": 2}])
    with faulty.worker.client(faulty.bearer) as c:
        for _ in range(2):
            with pytest.raises(grpc.RpcError) as info:
                c.get(finished_run.run_id)
            assert error_reason(info.value) == (grpc.StatusCode.INTERNAL, "INTERNAL")
        assert c.get(finished_run.run_id).run_id == finished_run.run_id
    assert faulty.control.observations()["rpc_calls"]["RunService/GetRun"] == 3


def test_rpc_fail_on_watch(faulty, finished_run, case):
    case([{"kind": "rpc_fail", "rpc": "WatchRun", "code": "UNAVAILABLE"}])
    with faulty.worker.client(faulty.bearer) as c:
        events, err = watch_all(c, finished_run.run_id)
        assert events == [] and err.code() == grpc.StatusCode.UNAVAILABLE
        events, err = watch_all(c, finished_run.run_id)
    assert err is None and events


def test_server_info_override(faulty, case):
    case([{"kind": "server_info", "instance_id": "wkr_impostor",
           "deployment_mode": "SIDECAR", "api_major": 2}])
    with faulty.worker.client(faulty.bearer) as c:
        info = c.server_info()
    assert info.instance_id == "wkr_impostor"
    assert info.deployment_mode == system_pb2.DEPLOYMENT_MODE_SIDECAR
    assert info.api_major == 2
    assert info.api_package == "colossus.api.v1alpha1"  # untouched fields stay genuine
    faulty.control.end()
    faulty.control.begin("after-override", [])
    with faulty.worker.client(faulty.bearer) as c:
        assert c.server_info().instance_id == faulty.worker.instance_id


def test_observations_record_connections_rpcs_and_bearer(faulty, finished_run, case):
    case([])
    with faulty.worker.client(faulty.bearer) as c:
        c.server_info()
        c.get(finished_run.run_id)
        watch_all(c, finished_run.run_id, after=7)
    with faulty.worker.client(None) as anon:
        with pytest.raises(grpc.RpcError) as info:
            anon.server_info()
        assert error_reason(info.value) == (grpc.StatusCode.UNAUTHENTICATED,
                                            "CREDENTIAL_MISSING")
    obs = faulty.control.observations()
    conns = obs["connections"]
    assert len(conns) == 2
    first, second = conns
    assert first["id"] == 1 and second["id"] == 2
    for conn in conns:
        assert conn["tls_version"] == "TLSv1.3" and conn["handshake_completed"] is True
    assert first["rpcs"] == ["SystemService/GetServerInfo", "RunService/GetRun",
                             "RunService/WatchRun"]
    assert first["bearer_presented"] is True
    assert second["rpcs"] == ["SystemService/GetServerInfo"]
    assert second["bearer_presented"] is False
    assert obs["rpc_calls"] == {"SystemService/GetServerInfo": 2, "RunService/GetRun": 1,
                                "RunService/WatchRun": 1}
    assert obs["watch_cursors"] == [7]
    assert obs["bearer_seen"] is True
    assert faulty.bearer not in str(obs)


def test_observations_reset_per_case(faulty, case):
    case([])
    obs = faulty.control.observations()
    assert obs == {"connections": [], "rpc_calls": {}, "watch_cursors": [],
                   "bearer_seen": False, "silent_closes": 0, "shutdowns": 0}


def test_rpc_fail_on_artifact_calls(faulty, case):
    import hashlib

    from worker_harness import artifacts_pb2

    data = b"fault me"

    def requests():
        yield artifacts_pb2.UploadArtifactRequest(manifest=artifacts_pb2.ArtifactManifest(
            media_type="text/plain", size_bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest()))
        yield artifacts_pb2.UploadArtifactRequest(chunk=data)

    case([{"kind": "rpc_fail", "rpc": "UploadArtifact", "code": "UNAVAILABLE",
           "after_commit": True},
          {"kind": "rpc_fail", "rpc": "DownloadArtifact", "code": "UNAVAILABLE"}])
    with faulty.worker.client(faulty.bearer) as c:
        with pytest.raises(grpc.RpcError) as info:
            c.artifacts.UploadArtifact(requests(), metadata=c.metadata, timeout=10)
        assert error_reason(info.value) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
        meta = c.artifacts.UploadArtifact(requests(), metadata=c.metadata, timeout=10).artifact
        req = artifacts_pb2.DownloadArtifactRequest(artifact_id=meta.artifact_id)
        with pytest.raises(grpc.RpcError) as info:
            list(c.artifacts.DownloadArtifact(req, metadata=c.metadata, timeout=10))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        parts = list(c.artifacts.DownloadArtifact(req, metadata=c.metadata, timeout=10))
    assert parts[1].chunk == data
    assert faulty.control.observations()["rpc_calls"] == {
        "ArtifactService/UploadArtifact": 2, "ArtifactService/DownloadArtifact": 2}


def test_fault_injection_is_off_unless_asked(short_tmp):
    import subprocess

    from worker_harness import WORKER, private_dir

    pub = private_dir(short_tmp / "pub-no-faults")
    # A listener variant alone is refused: it needs the control socket.
    proc = subprocess.run([*WORKER, "--public-api-dir", str(pub), "--fault-listener", "tls12"],
                          capture_output=True, timeout=30, check=False)
    assert proc.returncode == 2
    assert b"--fault-control-socket" in proc.stderr
    # An existing path is never reused or replaced.
    taken = short_tmp / "taken.sock"
    taken.write_text("not a socket")
    proc = subprocess.run([*WORKER, "--public-api-dir", str(pub), "--fault-control-socket",
                           str(taken)], capture_output=True, timeout=30, check=False)
    assert proc.returncode == 2 and taken.read_text() == "not a socket"
