"""The server case catalogue: names, citations, selection and capability gating."""

from __future__ import annotations

import json
from pathlib import Path

from colossus_conformance.results import NOT_APPLICABLE, SKIPPED
from colossus_conformance.server import catalogue, suite
from colossus_conformance.server.cases import load as load_cases
from colossus_conformance.server.manifest import load

# W* IDs no client can observe (docs/requirements.md says why for each).
NOT_OBSERVABLE = {"W12", "W15"}


def test_every_case_is_named_in_its_group_and_cites_worker_requirements() -> None:
    cases = load_cases()
    assert len(cases) >= 60
    assert len({c.id for c in cases}) == len(cases)
    for case in cases:
        assert case.id.startswith("server.") and case.id.count(".") == 2, case.id
        assert case.requirements and all(r.startswith("W") for r in case.requirements), case.id
        assert case.title, case.id


def test_every_observable_worker_requirement_has_a_case() -> None:
    cited = {r for c in load_cases() for r in c.requirements}
    assert cited == {f"W{i}" for i in range(1, 17)} - NOT_OBSERVABLE


def test_select_takes_globs_and_prefixes() -> None:
    cases = load_cases()
    assert {c.group for c in catalogue.select(cases, ["server.watch"])} == {"watch"}
    assert [c.id for c in catalogue.select(cases, ["server.tls.only-tls13"])] == ["server.tls.only-tls13"]
    assert catalogue.select(cases, ["*.h2spec"])[0].tool == "h2spec"


def test_cases_for_missing_capabilities_are_not_applicable_and_never_pass(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(
        json.dumps(
            {
                "worker": "bare",
                "capabilities": [],
                "daemon": {"start": ["w"], "enrol": ["w"], "scope": ["{scope}"]},
            }
        )
    )
    manifest = load(path)
    by_id = {c.id: c for c in load_cases()}
    verdict = suite.not_runnable(manifest, by_id["server.durability.kill-and-settle"], None)
    assert verdict is not None and verdict.status == NOT_APPLICABLE and "kill" in verdict.reason
    assert suite.not_runnable(manifest, by_id["server.watch.exact-replay"], None) is None
    skipped = suite.not_runnable(manifest, by_id["server.http2.h2spec"], None)
    assert skipped is not None and skipped.status == SKIPPED
    assert suite.not_runnable(manifest, by_id["server.http2.h2spec"], "/bin/h2spec") is None


def test_a_run_with_only_inapplicable_cases_starts_no_worker_and_is_not_ok(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(
        json.dumps(
            {
                "worker": "bare",
                "capabilities": [],
                "daemon": {"start": ["false"], "enrol": ["false"], "scope": ["{scope}"]},
            }
        )
    )
    cases = catalogue.select(load_cases(), ["server.sidecar", "server.durability"])
    verdict = suite.run(load(path), cases, suite.Options(scratch=tmp_path, log_dir=tmp_path))
    assert {r.status for r in verdict.results} == {NOT_APPLICABLE}
    assert not verdict.ok  # nothing executed is never a pass
