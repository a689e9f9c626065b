"""SDK columns run one after another or several at a time (``--jobs``), with the same verdicts.

Concurrency is proven without timing: a ``rendezvous`` case only answers once every
client has reached it, so it passes when the columns overlap and times out when
they run one after another.
"""

import json
import sys
import threading
import time

import pytest

from colossus_conformance import catalogue, cli, columns
from colossus_conformance.case_queue import longest_first
from colossus_conformance.results import FAIL, NOT_RUN, PASS
from colossus_conformance.runner import Options
from colossus_conformance.sdks import ClientSpec, discover

from .conftest import HERE, SUITE, make_cases


def fakes(tmp_path, names, expected=None):
    """Fake clients that meet in ``rendezvous`` cases once ``expected`` of them arrived."""
    folder = tmp_path / "rendezvous"
    folder.mkdir(parents=True, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "FAKE_RENDEZVOUS_DIR": str(folder)}
    env["FAKE_RENDEZVOUS_COUNT"] = str(expected or len(names))
    return [
        ClientSpec(
            sdk=name,
            folder=HERE,
            command=(sys.executable, str(HERE / "fake_client.py")),
            env={**env, "FAKE_CLIENT_NAME": name},
        )
        for name in names
    ]


def options(tmp_path, on_result=None):
    kf_dir = tmp_path / "kf"
    kf_dir.mkdir(parents=True, exist_ok=True)
    return Options(
        results_dir=tmp_path / "results", known_failures_dir=kf_dir, scratch=tmp_path, on_result=on_result
    )


def table(verdict):
    return [(r.sdk, r.case_id, r.status) for r in verdict.results]


def test_parallel_columns_overlap(tmp_path, validator):
    cases = make_cases(validator, ["selftest.rendezvous"], timeout_seconds=60)
    verdict = cli.run(cases, cases, fakes(tmp_path, ["fake-a", "fake-b"]), options(tmp_path), jobs=2)
    assert table(verdict) == [
        ("fake-a", "selftest.rendezvous", PASS),
        ("fake-b", "selftest.rendezvous", PASS),
    ]


def test_serial_columns_do_not_overlap(tmp_path, validator):
    # The control for the test above: one at a time, the first client waits in vain.
    cases = make_cases(validator, ["selftest.rendezvous"], timeout_seconds=1)
    verdict = cli.run(cases, cases, fakes(tmp_path, ["fake-a", "fake-b"]), options(tmp_path), jobs=1)
    assert table(verdict) == [
        ("fake-a", "selftest.rendezvous", FAIL),
        ("fake-b", "selftest.rendezvous", PASS),
    ]


def test_parallel_verdicts_equal_serial_ones_in_client_order(tmp_path, validator):
    ids = ["selftest.one", "selftest.leak", "selftest.garbage", "selftest.after-garbage"]
    cases = make_cases(validator, ids)
    names = ["fake-c", "fake-a", "fake-b"]
    serial = cli.run(cases, cases, fakes(tmp_path / "s", names), options(tmp_path / "s"), jobs=1)
    parallel = cli.run(cases, cases, fakes(tmp_path / "p", names), options(tmp_path / "p"), jobs=3)
    assert table(parallel) == table(serial)
    assert [r.sdk for r in parallel.results] == [n for n in names for _ in ids]
    assert {r.status for r in parallel.results} == {PASS, FAIL, NOT_RUN}


def test_each_parallel_column_logs_to_its_own_folder(tmp_path, validator):
    cases = make_cases(validator, ["selftest.one", "selftest.two"])
    cli.run(cases, cases, fakes(tmp_path, ["fake-a", "fake-b"]), options(tmp_path), jobs=2)
    logs = tmp_path / "results" / "logs"
    for name in ("fake-a", "fake-b"):
        records = (logs / name / f"{name}-cases.jsonl").read_text().splitlines()
        assert [json.loads(r)["instruction"]["case"] for r in records] == ["selftest.one", "selftest.two"]
        assert "fake client running selftest.two" in (logs / name / f"client-{name}.log").read_text()
    assert not list(logs.glob("*.jsonl")), "a parallel column wrote to the shared log folder"


def test_cross_sdk_cases_rotate_after_parallel_columns(tmp_path, validator):
    cases = make_cases(validator, ["selftest.cross"])
    steps = ({"id": "nap", "sdk": "A", "op": "sleep", "args": {"seconds": 0}},)
    object.__setattr__(cases[0], "steps", steps)
    assert cases[0].cross_sdk
    verdict = cli.run(cases, cases, fakes(tmp_path, ["fake-a", "fake-b"]), options(tmp_path), jobs=2)
    assert table(verdict) == [
        ("cross(fake-a,fake-b,fake-a)", "selftest.cross", PASS),
        ("cross(fake-b,fake-a,fake-b)", "selftest.cross", PASS),
    ]
    assert (tmp_path / "results" / "logs" / "cross" / "cross(fake-a,fake-b,fake-a)-cases.jsonl").is_file()


def test_progress_lines_are_reported_one_column_at_a_time(tmp_path, validator):
    guard = threading.Lock()
    seen = {"inside": 0, "most": 0}

    def on_result(_result):
        with guard:
            seen["inside"] += 1
            seen["most"] = max(seen["most"], seen["inside"])
        # Both columns finish the rendezvous case together: without the runner's own
        # lock, the second result would come in while the first is still here.
        time.sleep(0.5)
        with guard:
            seen["inside"] -= 1

    cases = make_cases(validator, ["selftest.rendezvous"], timeout_seconds=60)
    cli.run(cases, cases, fakes(tmp_path, ["fake-a", "fake-b"]), options(tmp_path, on_result), jobs=2)
    assert seen["most"] == 1


def test_jobs_below_one_are_refused(tmp_path, validator, capsys):
    cases = make_cases(validator, ["selftest.one"])
    with pytest.raises(ValueError, match="at least 1"):
        cli.run(cases, cases, fakes(tmp_path, ["fake-a"]), options(tmp_path), jobs=0)
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--jobs", "0"])
    assert "at least 1" in capsys.readouterr().err


def test_default_jobs_follow_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.setattr(columns.os, "sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    assert columns.default_jobs() == 3 * columns.RUNNERS_PER_CPU
    assert cli.build_parser().parse_args([]).jobs == 3 * columns.RUNNERS_PER_CPU


@pytest.fixture
def real_clients():
    pytest.importorskip("colossus_agent_client")
    pytest.importorskip("colossus_reference_worker.cli")
    clients = discover(SUITE / "clients")
    return [clients["python"], clients["python-async"]]


def test_parallel_columns_get_workers_of_their_own(tmp_path, real_clients):
    # Fault cases arm the worker for one case at a time: two columns sharing a
    # worker would trip over each other's faults and observations.
    wanted = ["gap-failure.mid-stream", "watch-dedup.mid-stream", "pin-checks.genuine-connects"]
    cases = [c for c in catalogue.load_catalogue(SUITE / "cases") if c.id in wanted]
    run_options = Options(
        results_dir=tmp_path / "results", known_failures_dir=SUITE / "known_failures", scratch=tmp_path
    )
    verdict = cli.run(cases, cases, real_clients, run_options, jobs=2)
    assert {(r.sdk, r.case_id): r.status for r in verdict.results} == {
        (spec.sdk, case_id): PASS for spec in real_clients for case_id in wanted
    }
    assert verdict.ok, verdict.all_problems()
    logs = tmp_path / "results" / "logs"
    starts = [
        line
        for spec in real_clients
        for line in (logs / spec.sdk / "worker-daemon.log").read_text().splitlines()
        if line.startswith("== start")
    ]
    assert len(starts) == 2
    assert len({line.split("--state-dir ")[1].split()[0] for line in starts}) == 2


def test_runners_of_one_column_share_its_cases_at_the_same_time(tmp_path, validator):
    # Two cases that meet at one rendezvous: they pass only if two runners of the
    # single column run them at once, each with a client process of its own.
    ids = ["selftest.rendezvous-1", "selftest.rendezvous-2", "selftest.one", "selftest.two"]
    cases = make_cases(validator, ids, timeout_seconds=60)
    verdict = cli.run(cases, cases, fakes(tmp_path, ["fake-a"], expected=2), options(tmp_path), jobs=2)
    assert table(verdict) == [("fake-a", case_id, PASS) for case_id in ids]
    logs = tmp_path / "results" / "logs" / "fake-a"
    ran = [
        json.loads(line)["instruction"]["case"]
        for folder in (logs, logs / "runner-2")
        for line in (folder / "fake-a-cases.jsonl").read_text().splitlines()
    ]
    assert sorted(ran) == sorted(ids), "each case runs exactly once, in one of the two runners"


def test_one_runner_per_column_does_not_meet_itself(tmp_path, validator):
    # The control for the test above: with one runner the first case waits in vain.
    ids = ["selftest.rendezvous-1", "selftest.rendezvous-2"]
    cases = make_cases(validator, ids, timeout_seconds=1)
    verdict = cli.run(cases, cases, fakes(tmp_path, ["fake-a"], expected=2), options(tmp_path), jobs=1)
    assert table(verdict)[0] == ("fake-a", "selftest.rendezvous-1", FAIL)


def test_shared_columns_give_the_serial_verdicts_in_suite_order(tmp_path, validator):
    ids = ["selftest.one", "selftest.leak", "selftest.two", "selftest.three", "selftest.four"]
    cases = make_cases(validator, ids)
    # A longer time-out goes first in the queue, yet the verdict keeps the suite's order.
    object.__setattr__(cases[3], "timeout_seconds", 9.0)
    names = ["fake-b", "fake-a"]
    serial = cli.run(cases, cases, fakes(tmp_path / "s", names), options(tmp_path / "s"), jobs=1)
    shared = cli.run(cases, cases, fakes(tmp_path / "p", names), options(tmp_path / "p"), jobs=6)
    assert table(shared) == table(serial)
    assert [r.case_id for r in shared.results] == ids * 2


def test_a_runner_whose_client_crashed_leaves_the_rest_to_the_others(tmp_path, validator):
    ids = ["selftest.crash", "selftest.one", "selftest.two", "selftest.three"]
    cases = make_cases(validator, ids)
    verdict = cli.run(cases, cases, fakes(tmp_path, ["fake-a"]), options(tmp_path), jobs=2)
    statuses = dict((case_id, status) for _sdk, case_id, status in table(verdict))
    assert statuses["selftest.crash"] == FAIL
    assert [statuses[c] for c in ids[1:]] == [PASS, PASS, PASS]


def test_a_column_whose_runners_all_died_reports_the_rest_not_run(tmp_path, validator):
    ids = ["selftest.crash-1", "selftest.crash-2", "selftest.one", "selftest.two"]
    cases = make_cases(validator, ids)
    verdict = cli.run(cases, cases, fakes(tmp_path, ["fake-a"]), options(tmp_path), jobs=2)
    assert table(verdict) == [
        ("fake-a", "selftest.crash-1", FAIL),
        ("fake-a", "selftest.crash-2", FAIL),
        ("fake-a", "selftest.one", NOT_RUN),
        ("fake-a", "selftest.two", NOT_RUN),
    ]
    assert all("crashed during selftest.crash-" in r.reason for r in verdict.results[2:])


def test_longest_time_outs_are_queued_first_in_suite_order_otherwise(validator):
    cases = make_cases(validator, ["selftest.a", "selftest.b", "selftest.c"])
    object.__setattr__(cases[2], "timeout_seconds", 30.0)
    assert [c.id for c in longest_first(cases)] == ["selftest.c", "selftest.a", "selftest.b"]


def test_runners_per_column_spread_the_jobs():
    assert columns.runners_per_column(8, 4) == 2
    assert columns.runners_per_column(2, 4) == 1
    assert columns.runners_per_column(7, 3) == 2
    assert columns.runners_per_column(2, 1) == 2
