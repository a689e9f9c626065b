"""The worker-restart cases notice a client that does not hold its connections (needs the
worker and the Python SDK).

A client that closes its SDK clients at a sync point and opens new ones (re-creating a
watch from its cursor) would let an SDK pass without ever meeting a restart on a held
connection. The healthy Python client must pass the cases below and this broken one
(mutant/fresh_client_after_sync.py) must fail the watch cases.
"""

import sys

import pytest

from colossus_conformance import catalogue
from colossus_conformance.results import FAIL, PASS
from colossus_conformance.runner import Options, Suite
from colossus_conformance.sdks import ClientSpec

from .conftest import HERE, SUITE

pytest.importorskip("colossus_agent_client")
pytest.importorskip("colossus_reference_worker.cli")

WATCH_CASES = [
    "worker-restart.watch-across-graceful-restart",
    "worker-restart.watch-across-kill-down-two-seconds",
]
CASES = [*WATCH_CASES, "worker-restart.unary-call-on-the-same-client"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    cases = [c for c in catalogue.load_catalogue(SUITE / "cases") if c.id in CASES]
    tmp = tmp_path_factory.mktemp("sync-sensitivity")
    s = Suite(cases, Options(results_dir=tmp / "results", known_failures_dir=tmp, scratch=tmp))
    yield s
    s.close()


def statuses(suite, spec):
    verdict = suite.run_sdk(spec, [c.id for c in suite.cases])
    for r in verdict.results:
        if r.status == FAIL:  # from the case's own assertions, never from the runner
            assert all(d.startswith(("steps.", "worker.")) for d in r.details), r.details
    return {r.case_id: r for r in verdict.results}


def test_the_held_client_passes(suite):
    spec = ClientSpec("python", SUITE / "clients" / "python", (sys.executable, "client.py"))
    results = statuses(suite, spec)
    assert {r.status for r in results.values()} == {PASS}, {k: r.details for k, r in results.items()}


def test_a_client_that_reopens_after_the_sync_point_fails_the_watch_cases(suite):
    spec = ClientSpec("python", HERE / "mutant", (sys.executable, "fresh_client_after_sync.py"))
    results = statuses(suite, spec)
    for case_id in WATCH_CASES:
        assert results[case_id].status == FAIL, f"{case_id} did not notice a client that reopens"
        assert any(d.startswith("steps.w.value.reconnects") for d in results[case_id].details)
