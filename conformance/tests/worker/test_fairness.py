"""Issue 11 (2, 3): no request and no application can stall another application.

Both tests hold a hostile load from app1 open while app2 calls with a deadline
far above a normal answer and far below the stall the defect caused (30 s and
more): a liveness check, not a speed check.
"""

from __future__ import annotations

import threading

from raw_h2 import RawClient, frame
from test_hostile_input import RUNS, SYSTEM, UNKNOWN_FLOOD

from conftest import pb

PATIENCE = 10  # seconds; the defects held app2 for 30 s or longer


def _app2_answers(worker) -> None:
    c = worker.client("app2")
    info = c.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=c.md,
                                  timeout=PATIENCE)
    assert info.server_info.instance_id
    run = c.runs.CreateRun(pb.rs.CreateRunRequest(
        idempotency_key="fair-1", input=[pb.runs.InputPart(text="hi")]),
        metadata=c.md, timeout=PATIENCE).run
    assert c.runs.GetRun(pb.rs.GetRunRequest(run_id=run.run_id), metadata=c.md,
                         timeout=PATIENCE).run.run_id == run.run_id


def test_bodyless_streams_of_one_application_do_not_block_another(make_worker):
    worker = make_worker()
    raw = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        held = [raw.open(RUNS + "GetRun") for _ in range(12)]  # headers, never a body
        raw.round_trip()
        _app2_answers(worker)
        assert not any(raw.outcomes[s].done for s in held)  # app1's streams still wait
    finally:
        raw.close()


def test_a_costly_request_does_not_stall_other_applications(make_worker):
    worker = make_worker()
    raw = RawClient(worker.target, worker.pem, worker.bearers["app1"])
    try:
        stream_id = raw.open(RUNS + "GetRun")
        sender = threading.Thread(target=raw.send, args=(stream_id, frame(UNKNOWN_FLOOD)))
        sender.start()
        _app2_answers(worker)
        sender.join(60)
        outcome = raw.wait(stream_id, timeout=60)
        assert outcome.grpc_status == 3 and outcome.error_info()[0] == "FIELD_INVALID"
        # GetServerInfo is refused the same way when flooded.
        flood = raw.call(SYSTEM, frame(UNKNOWN_FLOOD))
        assert flood.grpc_status == 3
    finally:
        raw.close()
