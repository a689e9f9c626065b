"""The runner's verdict logic, end to end with a fake client and no worker."""

import xml.etree.ElementTree as ET

import pytest

from colossus_conformance import cli, known_failures, report
from colossus_conformance.judging import judge
from colossus_conformance.results import FAIL, NOT_RUN, PASS, XFAIL, XPASS, CaseResult, RunVerdict
from colossus_conformance.runner import Options

from .conftest import make_cases


def run(tmp_path, cases, fake_client, known=None, all_ids=None):
    kf_dir = tmp_path / "kf"
    kf_dir.mkdir(exist_ok=True)
    if known is not None:
        import yaml

        (kf_dir / "fake.yaml").write_text(yaml.safe_dump({"sdk": "fake", "entries": known}))
    options = Options(results_dir=tmp_path / "results", known_failures_dir=kf_dir, scratch=tmp_path)
    all_cases = cases if all_ids is None else all_ids
    return cli.run(all_cases, cases, [fake_client], options)


def statuses(verdict):
    return {r.case_id: r.status for r in verdict.results}


def test_passing_cases_make_an_ok_run(tmp_path, validator, fake_client):
    verdict = run(tmp_path, make_cases(validator, ["selftest.a", "selftest.b"]), fake_client)
    assert statuses(verdict) == {"selftest.a": PASS, "selftest.b": PASS}
    assert verdict.ok


def test_crash_marks_the_rest_not_run_and_keeps_what_finished(tmp_path, validator, fake_client):
    cases = make_cases(validator, ["selftest.first", "selftest.crash", "selftest.third", "selftest.fourth"])
    verdict = run(tmp_path, cases, fake_client)
    assert statuses(verdict) == {
        "selftest.first": PASS,
        "selftest.crash": FAIL,
        "selftest.third": NOT_RUN,
        "selftest.fourth": NOT_RUN,
    }
    assert not verdict.ok
    crashed = next(r for r in verdict.results if r.case_id == "selftest.crash")
    assert "crashed" in crashed.details[0]


def test_garbage_output_is_a_protocol_error(tmp_path, validator, fake_client):
    verdict = run(tmp_path, make_cases(validator, ["selftest.garbage", "selftest.next"]), fake_client)
    assert statuses(verdict) == {"selftest.garbage": FAIL, "selftest.next": NOT_RUN}


def test_timeout_fails_the_case_and_restarts_the_client(tmp_path, validator, fake_client):
    cases = make_cases(validator, ["selftest.hang", "selftest.after"], timeout_seconds=0.5)
    verdict = run(tmp_path, cases, fake_client)
    assert statuses(verdict) == {"selftest.hang": FAIL, "selftest.after": PASS}


def test_listed_failure_is_expected(tmp_path, validator, fake_client):
    cases = make_cases(validator, ["selftest.bad"])
    object.__setattr__(cases[0], "assertions", ({"path": "steps.nap.value.echo.seconds", "equals": 1},))
    verdict = run(
        tmp_path, cases, fake_client, known=[{"pattern": "selftest.bad", "reason": "a known SDK defect"}]
    )
    assert statuses(verdict) == {"selftest.bad": XFAIL}
    assert verdict.ok


def test_listed_case_that_passes_fails_the_run(tmp_path, validator, fake_client):
    cases = make_cases(validator, ["selftest.good"])
    verdict = run(
        tmp_path, cases, fake_client, known=[{"pattern": "selftest.g*", "reason": "believed broken"}]
    )
    assert statuses(verdict) == {"selftest.good": XPASS}
    assert not verdict.ok


def test_dangling_pattern_fails_the_run(tmp_path, validator, fake_client):
    cases = make_cases(validator, ["selftest.good"])
    verdict = run(
        tmp_path, cases, fake_client, known=[{"pattern": "selftest.nothing.*", "reason": "stale entry here"}]
    )
    assert statuses(verdict) == {"selftest.good": PASS}
    assert not verdict.ok
    assert any("matches no case" in p for p in verdict.problems)


def test_pattern_for_an_unselected_case_is_not_dangling(tmp_path, validator, fake_client):
    everything = make_cases(validator, ["selftest.good", "selftest.other"])
    verdict = run(
        tmp_path,
        everything[:1],
        fake_client,
        known=[{"pattern": "selftest.other", "reason": "fails elsewhere"}],
        all_ids=everything,
    )
    assert verdict.ok


def test_a_run_that_executes_nothing_fails(tmp_path, validator, fake_client):
    assert not run(tmp_path, [], fake_client).ok
    skipped = make_cases(
        validator, ["selftest.opt"], level="RECOMMENDED", requires_features=["missing-feature"]
    )
    verdict = run(tmp_path, skipped, fake_client)
    assert statuses(verdict) == {"selftest.opt": "SKIPPED"}
    assert not verdict.ok
    assert "no case was executed" in verdict.all_problems()


def test_feature_present_runs_the_case(tmp_path, validator, fake_client):
    cases = make_cases(validator, ["selftest.opt"], level="RECOMMENDED", requires_features=["fake-feature"])
    assert statuses(run(tmp_path, cases, fake_client)) == {"selftest.opt": PASS}


def test_bearer_in_a_report_fails_the_case(validator):
    [case] = make_cases(validator, ["selftest.leak"])
    bearer = "cb1_" + "A" * 43
    result = {
        "type": "result",
        "case": case.id,
        "steps": [
            {
                "id": "nap",
                "op": "sleep",
                "value": {"echo": {"seconds": 0}},
                "error": {"kind": "other", "message": f"bad {bearer}"},
            }
        ],
    }
    assert any("bearer" in f for f in judge(case, result, {}, [bearer]))
    # Any bearer of the issued grammar fails the case, even one the runner never enrolled
    # (a sidecar's bootstrap bearer).
    assert any("bearer" in f for f in judge(case, result, {}, ["cb1_" + "B" * 43]))


def test_enrolled_bearer_of_any_shape_fails_and_others_pass(validator):
    [case] = make_cases(validator, ["selftest.leak"])
    secret = "a-provider-secret-of-another-shape"
    result = {
        "type": "result",
        "case": case.id,
        "steps": [
            {
                "id": "nap",
                "op": "sleep",
                "value": {"echo": {"seconds": 0}},
                "error": {"kind": "other", "message": f"bad {secret}"},
            }
        ],
    }
    assert any("bearer" in f for f in judge(case, result, {}, [secret]))
    assert judge(case, result, {}, ["some-other-secret-value"]) == []


def test_trust_refusal_that_asked_for_the_bearer_fails(validator):
    [case] = make_cases(validator, ["selftest.leak"])
    hello = {"features": ["credential_calls"]}
    step = {"id": "nap", "op": "sleep", "value": {"echo": {"seconds": 0}}, "error": {"kind": "trust"}}
    step["credential_calls"] = 1
    result = {"type": "result", "case": case.id, "steps": [step]}
    assert any("credential provider was called" in f for f in judge(case, result, {}, [], hello=hello))
    step["credential_calls"] = 0
    assert judge(case, result, {}, [], hello=hello) == []


def test_known_failures_file_must_name_its_sdk():
    with pytest.raises(known_failures.KnownFailuresError):
        known_failures.parse({"sdk": "go", "entries": []}, "python")
    with pytest.raises(known_failures.KnownFailuresError):
        known_failures.parse({"sdk": "python", "entries": [{"pattern": "x"}]}, "python")


def test_reports_are_written(tmp_path):
    verdict = RunVerdict(
        [
            CaseResult("python", "g.a", "g", "REQUIRED", PASS, 0.1),
            CaseResult("python", "g.b", "g", "REQUIRED", XFAIL, 0.1, reason="known defect"),
            CaseResult("python", "h.c", "h", "RECOMMENDED", FAIL, 0.1, details=["steps.x: boom"]),
        ]
    )
    report.write(verdict, 1.5, tmp_path)
    md = (tmp_path / "matrix.md").read_text()
    assert "| g | 2 | 1/2 |" in md and "xfail: known defect" in md and "steps.x: boom" in md
    suites = ET.parse(tmp_path / "junit.xml").getroot()
    suite = suites.find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    text = report.console(verdict, 1.5)
    assert "FAILED" in text and "h " in text


def test_list_prints_group_counts(capsys):
    assert cli.main(["--list", "--run", "watch-dedup"]) == 0
    out = capsys.readouterr().out
    assert "watch-dedup" in out and "cases" in out
