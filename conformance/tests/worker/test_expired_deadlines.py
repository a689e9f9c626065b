"""A call whose deadline has passed before the worker reads it (W4, W11).

A client may send ``grpc-timeout`` of a nanosecond, or a deadline that a slow network
already spent. The call can only fail, but it must fail as ``DEADLINE_EXCEEDED`` and
quietly: any peer can send such calls without a valid bearer, so an error traceback in the
worker's log for each one lets a stranger flood the operator's log.
"""

from __future__ import annotations

import pytest
from raw_h2 import RawClient, frame
from test_hostile_input import string

from conftest import pb

DEADLINE_EXCEEDED = 4
GET_RUN = "/colossus.api.v1alpha1.RunService/GetRun"


@pytest.mark.parametrize("bearer", ["valid", "unknown"])
def test_an_expired_deadline_fails_as_deadline_exceeded_without_a_traceback(make_worker, bearer):
    worker = make_worker()
    token = worker.bearers["app1"] if bearer == "valid" else "cb1_" + "x" * 40
    raw = RawClient(worker.target, worker.pem, token)
    try:
        outcomes = [raw.call(GET_RUN, frame(string(1, b"run_a")),
                             extra=(("grpc-timeout", timeout),))
                    for timeout in ("1n", "0n", "0S")]
    finally:
        raw.close()
    assert [o.grpc_status for o in outcomes] == [DEADLINE_EXCEEDED] * 3
    # A following well-formed call is served as usual.
    client = worker.client("app1")
    info = client.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=client.md,
                                       timeout=10)
    assert info.server_info.api_package == "colossus.api.v1alpha1"
    log = worker.log_path.read_text()
    assert "Traceback" not in log and " ERROR " not in log
