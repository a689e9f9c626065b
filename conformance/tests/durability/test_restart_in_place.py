"""The fault channel's ``restart`` op and the ``shutdown`` fault: a worker stopped and
started again inside its own process (W15, docs/fault-control.md).

The ``worker-restart.many-restarts-*`` and ``*-meets-shutdown`` cases rely on an
in-place restart looking like a real one from the wire: the same port, identity and
discovery files, watches ended with UNAVAILABLE, the old connections gone, the runs
recovered, and, while the worker is down, nothing listening.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import grpc
import pytest
from worker_harness import FaultControl, Worker, enroll, error_reason, private_dir, script


def _refused(worker: Worker) -> bool:
    try:
        socket.create_connection(worker.address, timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_restart_in_place_keeps_port_identity_and_runs(short_tmp):
    pub = private_dir(short_tmp / "pub-inplace")
    bearer = enroll(pub, "app")
    sock_path = short_tmp / "ip.sock"
    worker = Worker.start(pub, "--fault-control-socket", str(sock_path))
    control = FaultControl(sock_path)
    outcome: dict[str, object] = {}
    try:
        control.begin("inplace")
        descriptor = json.loads((pub / "endpoint.json").read_text())
        with worker.client(bearer) as c:
            run = c.create("inplace-1", script("say before", "sleep 300", "say after")).run
            c.wait_status(run.run_id, {2})
            stream = c.watch(run.run_id, timeout=30)
            first = next(stream)

            def drain() -> None:
                try:
                    for _ in stream:
                        pass
                    outcome["error"] = None
                except grpc.RpcError as err:
                    outcome["error"] = err

            reader = threading.Thread(target=drain)
            reader.start()
            time.sleep(0.1)
            assert control.send({"op": "restart", "down_seconds": 0.05})["ok"] is True
            reader.join(10)
        err = outcome["error"]
        assert isinstance(err, grpc.RpcError)
        assert err.code() is grpc.StatusCode.UNAVAILABLE, "a watch ends retryably, as on SIGTERM"
        # Same process, port, identity and discovery files.
        assert worker.proc.poll() is None
        assert json.loads((pub / "endpoint.json").read_text()) == descriptor
        with worker.client(bearer) as c:
            events = [item.event.sequence for item in c.watch(run.run_id, after=0, timeout=10)]
            assert events[0] == first.event.sequence == 1
            assert events == list(range(1, len(events) + 1)), "the run was recovered and finished"
            assert c.get(run.run_id).result.output_text == "beforeafter"
        seen = control.observations()
        ids = [conn["id"] for conn in seen["connections"]]
        assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 2
        assert seen["watch_cursors"] == [0, 0]
        assert control.send({"op": "handshakes"})["in_progress"] == 0
    finally:
        control.close()
        worker.terminate()


@pytest.mark.parametrize(
    "request_",
    [{"op": "restart", "down_seconds": 6}, {"op": "restart", "down_seconds": True},
     {"op": "restart", "times": 2}],
)
def test_bad_restart_requests_are_refused(faulty, request_):
    reply = faulty.control.send(request_)
    assert reply["ok"] is False


def test_shutdown_stops_the_worker_under_the_call_until_the_case_ends(short_tmp):
    pub = private_dir(short_tmp / "pub-shutdown")
    bearer = enroll(pub, "app")
    sock_path = short_tmp / "sd.sock"
    worker = Worker.start(pub, "--fault-control-socket", str(sock_path))
    control = FaultControl(sock_path)
    try:
        control.begin("shutdown", [{"kind": "shutdown", "rpc": "GetServerInfo"}])
        with worker.client(bearer) as c, pytest.raises(grpc.RpcError) as failed:
            c.server_info()
        assert error_reason(failed.value)[0] is grpc.StatusCode.UNAVAILABLE, (
            "the call in flight is cut by the stop, never answered INTERNAL"
        )
        assert _refused(worker), "a stopped worker listens no more"
        assert not (pub / "endpoint.json").exists(), "discovery withdrawn, as on SIGTERM"
        assert control.observations()["shutdowns"] == 1
        control.end()  # the next case finds the worker serving again
        assert not _refused(worker)
        with worker.client(bearer) as c:
            assert c.server_info().instance_id == worker.instance_id
    finally:
        control.close()
        worker.terminate()


def test_shutdown_with_down_seconds_starts_again_by_itself(short_tmp):
    pub = private_dir(short_tmp / "pub-shutdown-timed")
    bearer = enroll(pub, "app")
    sock_path = short_tmp / "st.sock"
    worker = Worker.start(pub, "--fault-control-socket", str(sock_path))
    control = FaultControl(sock_path)
    try:
        control.begin("shutdown", [{"kind": "shutdown", "rpc": "GetRun", "down_seconds": 0.3}])
        with worker.client(bearer) as c:
            run = c.create("timed-1", script("say hi")).run
            with pytest.raises(grpc.RpcError):
                c.get(run.run_id)
        deadline = time.monotonic() + 10
        while _refused(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        with worker.client(bearer) as c:
            assert c.get(run.run_id).run_id == run.run_id, "back, with the run, before the case ends"
    finally:
        control.close()
        worker.terminate()
