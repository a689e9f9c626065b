"""Replies stay under the advertised 4 MiB response cap by construction (W11).

A run carries at most 1 MiB of released text; everything else a script can
put into a Run reply is small: a failure message, an approval's origin, a
prompt. So a ListRuns page of three of the largest runs still fits a client
that enforces the cap, as every SDK does (C7).
"""

from __future__ import annotations

import uuid

import grpc
import pytest
from colossus_agent_client.api.v1alpha1 import run_service_pb2_grpc

from conftest import expect_error, pb, script

S = pb.runs
OK = grpc.StatusCode
CAP = 4 << 20


@pytest.mark.parametrize(("line", "accepted"), [
    ("fail boom " + "m" * 4096, True),
    ("fail boom " + "m" * 4097, False),
    ("fail boom " + "é" * 2049, False),  # bytes, not characters
    ("approve web.fetch https://" + "a" * 253, True),
    ("approve web.fetch https://" + "a" * 254, False),
    ("approve web.fetch https://" + "a" * 600_000, False),
    ("approve web.fetch https://example.com:99999", False),
    ("approve web.fetch https://example.com:port", False),
    ("approve web.fetch https://[::1]:8443", True),
])
def test_free_text_a_run_reports_is_bounded(shared_worker, line, accepted):
    c = shared_worker.client("app1")

    def create():
        return c.create(uuid.uuid4().hex, script(line))

    if accepted:
        run = create().run
        c.cancel(run.run_id)
    else:
        meta = expect_error(create, OK.INVALID_ARGUMENT, "FIELD_INVALID")
        assert meta == {"field": "input[0].text"}


def test_a_page_of_the_largest_runs_fits_the_response_cap(shared_worker):
    c = shared_worker.client("app2")
    largest = script("repeat 1040 say " + "y" * 1000, "fail boom " + "m" * 4096)
    for _ in range(3):
        run = c.create(uuid.uuid4().hex, largest).run
        c.wait_status(run.run_id, S.RUN_STATUS_FAILED, timeout=120)
    capped = grpc.secure_channel(
        shared_worker.target, grpc.ssl_channel_credentials(root_certificates=shared_worker.pem),
        options=[("grpc.max_receive_message_length", CAP)])
    try:
        page = run_service_pb2_grpc.RunServiceStub(capped).ListRuns(
            pb.rs.ListRunsRequest(statuses=[S.RUN_STATUS_FAILED]), metadata=c.md, timeout=30)
    finally:
        capped.close()
    assert len(page.runs) == 3
    assert all(len(r.result.output_text) == 1_040_000 for r in page.runs)
    assert page.ByteSize() < CAP


def test_a_research_report_quotes_a_bounded_topic(shared_worker):
    c = shared_worker.client("app1")
    topic = "t" * (1024 * 1024 - 200)  # a first line of nearly 1 MiB
    run = c.create(uuid.uuid4().hex, topic, mode=S.RUN_MODE_RESEARCH,
                   research=S.ResearchOptions(depth=1, lanes=[S.EVIDENCE_LANE_REPOSITORY])).run
    final = c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED, timeout=60)
    report = final.result.research.report
    assert report.startswith("Report on " + "t" * 200 + "...:")
    assert final.ByteSize() < 4096
