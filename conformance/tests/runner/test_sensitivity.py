"""The catalogue notices real SDK defects (mutation check, needs the worker and SDK).

Each test runs a slice of the real catalogue against the reference worker with
a Python client whose SDK has one behaviour broken on purpose, and expects the
cases guarding that behaviour to fail while the healthy client passes them.
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

MUTANTS = {
    "no-dedup-no-gap": [
        "watch-dedup.mid-stream",
        "watch-dedup.across-reconnect",
        "gap-failure.mid-stream",
        "gap-failure.first-event-after-cursor",
    ],
    "bearer-in-log": ["pin-checks.genuine-connects"],
    "no-tls-preflight": ["pin-checks.c4.tls12-server"],
    "no-server-info-check": [
        "compatibility.wrong-instance-id",
        "compatibility.wrong-api-major",
        "compatibility.sidecar-mode-from-daemon",
    ],
    "retry-mutations": [
        "idempotency.no-retry-after-unknown-outcome",
        "retries.create-unavailable-not-retried",
        "cancel.not-retried-after-unavailable",
    ],
    "clean-close-is-completion": [
        "clean-close.non-terminal-resumes",
        "clean-close.terminal-beyond-cursor-fails",
    ],
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    wanted = sorted({c for ids in MUTANTS.values() for c in ids})
    cases = [c for c in catalogue.load_catalogue(SUITE / "cases") if c.id in wanted]
    tmp = tmp_path_factory.mktemp("sensitivity")
    options = Options(results_dir=tmp / "results", known_failures_dir=tmp, scratch=tmp)
    s = Suite(cases, options)
    yield s
    s.close()


def statuses(suite, spec):
    verdict = suite.run_sdk(spec, [c.id for c in suite.cases])
    for r in verdict.results:
        # A failure must come from the case's own assertions, not from the
        # runner, the worker or a crashed client.
        if r.status == FAIL:
            assert all(d.startswith(("steps.", "worker.", "a bearer")) for d in r.details), r.details
    return {r.case_id: r.status for r in verdict.results}


def test_healthy_client_passes_the_guarding_cases(suite):
    spec = ClientSpec("python", SUITE / "clients" / "python", (sys.executable, "client.py"))
    assert set(statuses(suite, spec).values()) == {PASS}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_caught(suite, mutant, monkeypatch):
    monkeypatch.setenv("COLOSSUS_CONFORMANCE_MUTANT", mutant)
    spec = ClientSpec("python", HERE / "mutant", (sys.executable, "mutant_client.py"))
    results = statuses(suite, spec)
    for case_id in MUTANTS[mutant]:
        assert results[case_id] == FAIL, f"{case_id} did not notice the {mutant} mutant"
