"""Sync points: the catalogue checks, the exchange with a client, and the runner's actions.

A sync point lets the runner restart the worker while a client holds its connections
(docs/client-protocol.md, Sync points). These tests use a fake client and a fake worker;
test_sync_sensitivity.py runs the real cases against the real SDK.
"""

import sys
import threading
import time

import pytest

from colossus_conformance import sync_points
from colossus_conformance.catalogue import CatalogueError, parse_document
from colossus_conformance.client_process import ClientProcess
from colossus_conformance.judging import credential_rule
from colossus_conformance.results import FAIL
from colossus_conformance.runner import Options, Suite
from colossus_conformance.sdks import ClientSpec

from .conftest import HERE

SYNC_CLIENT = (sys.executable, str(HERE / "sync_fake_client.py"))


def plan(*extra_steps, steps=None):
    base = [
        {"id": "c", "op": "create_run", "args": {"script": "say one"}},
        {"id": "w", "op": "watch", "args": {"run_id": "$c.run.run_id", "sync_after_events": 2}},
        {"id": "r", "op": "restart_worker", "args": {"at_sync": "w", "mode": "kill"}},
    ]
    return (steps if steps is not None else base) + list(extra_steps)


def document(steps, worker="daemon", case_id="selftest.sync"):
    return {
        "group": "selftest",
        "description": "sync-point self-test cases",
        "cases": [
            {
                "id": case_id,
                "title": "self-test",
                "requirements": ["S1"],
                "level": "REQUIRED",
                "worker": worker,
                "timeout_seconds": 5,
                "steps": steps,
                "assert": [{"path": "steps.w.value.released", "equals": True}],
            }
        ],
    }


# -- catalogue -----------------------------------------------------------------------------


def test_a_bound_action_is_kept_out_of_the_client_steps(validator):
    (case,) = parse_document(document(plan()), validator, "selftest.yaml")
    kept, actions = sync_points.bound_actions(list(case.steps))
    assert [s["id"] for s in kept] == ["c", "w"]
    assert actions["w"]["id"] == "r"
    assert sync_points.sync_point_ids(kept) == ["w"]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (plan(steps=plan()[:2]), "have no runner action"),
        (plan({"id": "s", "op": "sync"}), "s have no runner action"),
        (plan({"id": "r2", "op": "restart_worker", "args": {"at_sync": "w"}}), "already has action r"),
        (plan({"id": "r2", "op": "restart_worker", "args": {"at_sync": "c"}}), "not an earlier sync point"),
        (
            [plan()[0], plan()[2], plan()[1]],  # the action before its sync point
            "not an earlier sync point",
        ),
        (
            plan(
                steps=[plan()[0], {**plan()[1], "args": {"run_id": "x", "sync_after_events": 0}}, plan()[2]]
            ),
            "sync_after_events must be an integer >= 1",
        ),
        (
            plan({"id": "r2", "op": "restart_worker", "args": {"down_seconds": "until_result"}}),
            "needs at_sync",
        ),
        (
            plan(
                steps=[
                    *plan()[:2],
                    {"id": "r", "op": "restart_worker", "args": {"at_sync": "w", "down_seconds": 99}},
                ]
            ),
            "down_seconds must be 0-60",
        ),
    ],
)
def test_bad_sync_plans_are_refused(validator, steps, message):
    with pytest.raises(CatalogueError, match=message):
        parse_document(document(steps), validator, "selftest.yaml")


def test_a_sync_step_needs_no_connection(validator):
    steps = [{"id": "s", "op": "sync"}, {"id": "r", "op": "restart_worker", "args": {"at_sync": "s"}}]
    doc = document(steps)
    doc["cases"][0]["connections"] = []
    doc["cases"][0]["assert"] = [{"path": "steps.s.value", "exists": True}]
    (case,) = parse_document(doc, validator, "selftest.yaml")
    assert sync_points.sync_point_ids(list(case.steps)) == ["s"]


# -- the exchange with a client -------------------------------------------------------------


def instruction(case_id, steps):
    return {"type": "case", "case": case_id, "timeout_seconds": 5, "connections": [], "steps": steps}


@pytest.fixture
def client(tmp_path):
    process = ClientProcess(list(SYNC_CLIENT), HERE, tmp_path / "client.log")
    process.start()
    yield process
    process.stop()


def test_the_client_waits_at_each_sync_point_until_the_runner_has_acted(client):
    acted = []

    def on_sync(step):
        time.sleep(0.2)  # the client must still be waiting when this returns
        acted.append(step)

    steps = [
        {"id": "s", "op": "sync"},
        {"id": "n", "op": "sleep", "args": {"seconds": 0}},
        {"id": "w", "op": "watch", "args": {"run_id": "r", "sync_after_events": 1}},
    ]
    exchange = client.run_case(instruction("selftest.syncs", steps), [], 5, on_sync=on_sync)
    assert exchange.status == "ok", exchange.detail
    assert exchange.synced == acted == ["s", "w"]
    assert [s["value"]["released"] for s in exchange.result["steps"]] == [True, False, True]


def test_time_spent_acting_does_not_count_against_the_timeout(client):
    steps = [{"id": "s", "op": "sync"}]
    exchange = client.run_case(
        instruction("selftest.syncs", steps), [], 1.5, on_sync=lambda step: time.sleep(2)
    )
    assert exchange.status == "ok", exchange.detail


def test_a_sync_line_for_a_step_without_a_sync_point_is_a_protocol_error(client):
    steps = [{"id": "n", "op": "sleep", "args": {"seconds": 0}}]
    exchange = client.run_case(instruction("selftest.stray-sync", steps), [], 5, on_sync=lambda step: None)
    assert exchange.status == "protocol_error"
    assert "unexpected sync point 'n'" in exchange.detail


def test_a_second_sync_line_for_the_same_point_is_a_protocol_error(client):
    steps = [{"id": "s", "op": "sync"}]
    exchange = client.run_case(instruction("selftest.two-releases", steps), [], 5, on_sync=lambda step: None)
    assert exchange.status == "protocol_error"
    assert "unexpected sync point 's'" in exchange.detail


def test_a_client_that_never_reaches_its_sync_point_times_out_naming_it(client):
    steps = [{"id": "w", "op": "watch", "args": {"run_id": "r", "sync_after_events": 1}}]
    exchange = client.run_case(instruction("selftest.hangs-at-sync", steps), [], 1, on_sync=lambda step: None)
    assert exchange.status == "timeout"
    assert "sync points never reached: w" in exchange.detail


# -- the runner's verdict --------------------------------------------------------------------


def run_suite(tmp_path, validator, case_id, steps):
    doc = document(steps, worker="none", case_id=case_id)
    doc["cases"][0]["connections"] = []
    cases = parse_document(doc, validator, "selftest.yaml")
    suite = Suite(cases, Options(results_dir=tmp_path / "r", known_failures_dir=tmp_path, scratch=tmp_path))
    try:
        spec = ClientSpec(sdk="fake-sync", folder=HERE, command=SYNC_CLIENT)
        (result,) = suite.run_sdk(spec, [case_id]).results
    finally:
        suite.close()
    return result


def test_a_client_that_never_syncs_fails_the_case_with_a_clear_message(tmp_path, validator):
    steps = [{"id": "w", "op": "sync"}, {"id": "r", "op": "restart_worker", "args": {"at_sync": "w"}}]
    result = run_suite(tmp_path, validator, "selftest.never-syncs", steps)
    assert result.status == FAIL
    assert any("never reached sync point w" in d and "action r did not run" in d for d in result.details)


def test_an_action_that_cannot_run_fails_the_case(tmp_path, validator):
    steps = [{"id": "w", "op": "sync"}, {"id": "r", "op": "restart_worker", "args": {"at_sync": "w"}}]
    result = run_suite(tmp_path, validator, "selftest.syncs", steps)
    assert result.status == FAIL
    assert any("runner action r at sync point w failed" in d for d in result.details)


def test_the_trust_rule_counts_only_calls_after_the_sync_point():
    hello = {"features": ["credential_calls"]}
    healthy_then_refused = {
        "id": "w",
        "error": {"kind": "trust"},
        "credential_calls": 1,
        "credential_calls_after_sync": 0,
    }
    assert credential_rule({"steps": [healthy_then_refused]}, hello) == []
    asked_again = dict(healthy_then_refused, credential_calls_after_sync=1)
    assert credential_rule({"steps": [asked_again]}, hello)


# -- the actions -----------------------------------------------------------------------------


class FakeWorker:
    control = None

    def __init__(self):
        self.calls = []
        self.started = threading.Event()

    def halt(self, hard, listener=None):
        self.calls.append(("halt", hard, listener))

    def start(self, silent_closes=0):
        self.calls.append(("start", silent_closes) if silent_closes else ("start",))
        self.started.set()


def actions_for(args, worker):
    action = {"id": "r", "op": "restart_worker", "args": {"at_sync": "w", **args}}
    return sync_points.SyncActions("selftest.sync", {"w": action}, worker, lambda: {})


def test_a_restart_without_down_time_is_done_before_the_release():
    worker = FakeWorker()
    actions = actions_for({"mode": "kill", "listener": "tls12"}, worker)
    actions.on_sync("w")
    assert worker.calls == [("halt", True, "tls12"), ("start",)]


def test_down_seconds_release_the_client_while_the_worker_is_still_down():
    worker = FakeWorker()
    actions = actions_for({"mode": "term", "down_seconds": 0.5}, worker)
    actions.on_sync("w")
    assert worker.calls == [("halt", False, None)]  # released before the start
    actions.finish()
    assert worker.calls[-1] == ("start",)
    reports = actions.with_reports([{"id": "w"}, {"id": "later"}])
    assert [r["id"] for r in reports] == ["w", "r", "later"]
    assert reports[1]["value"]["down_seconds"] >= 0.5


def test_until_result_keeps_the_worker_down_until_the_client_has_reported():
    worker = FakeWorker()
    actions = actions_for({"mode": "kill", "down_seconds": "until_result"}, worker)
    actions.on_sync("w")
    assert not worker.started.wait(0.3)
    actions.finish()
    assert worker.calls == [("halt", True, None), ("start",)]
    assert actions.missing([{"id": "w", "op": "sync"}]) == []


# -- arming a worker restarted mid-case ---------------------------------------------------


def test_keep_observations_keeps_what_a_restarted_worker_saw_before_it_was_armed(tmp_path):
    from colossus_reference_worker.faults.control import FaultControlServer
    from colossus_reference_worker.faults.hooks import FaultState
    from colossus_reference_worker.faults.plan import FaultSpecError
    from colossus_reference_worker.worker_hooks import WatchContext

    state = FaultState()
    control = FaultControlServer(str(tmp_path / "unused.sock"), state)
    resumed = WatchContext(call_index=1, application_id="app", run_id="run_1", after_sequence=3)
    state.watch_number(resumed)  # the client reconnected before the case was armed again
    state.observations.rpc(7, "RunService/WatchRun", True)
    reply = control.handle({"op": "begin_case", "case": "c", "faults": [], "keep_observations": True})
    assert reply["ok"]
    state.watch_number(resumed)  # the same call again: not a second watch
    observed = control.handle({"op": "observations"})["observations"]
    assert observed["watch_cursors"] == [3]
    assert observed["rpc_calls"] == {"RunService/WatchRun": 1}
    control.handle({"op": "begin_case", "case": "c", "faults": []})
    assert control.handle({"op": "observations"})["observations"]["watch_cursors"] == []
    with pytest.raises(FaultSpecError, match="keep_observations must be true or false"):
        control.handle({"op": "begin_case", "case": "c", "faults": [], "keep_observations": "yes"})


# -- a series of in-place restarts ------------------------------------------------------------


def series_plan(**args):
    return [
        {"id": "s", "op": "sync"},
        {"id": "r", "op": "restart_worker", "args": {"at_sync": "s", "mode": "term", **args}},
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"times": 0}, "times must be an integer 1-100"),
        ({"times": 101}, "times must be an integer 1-100"),
        ({"times": True}, "times must be an integer 1-100"),
        ({"times": 3, "mode": "kill"}, "graceful"),
        ({"times": 3, "listener": "tls12"}, "listener does not go with times"),
        ({"times": 3, "silent_closes": 1}, "silent_closes does not go with times"),
        ({"times": 3, "interval_seconds": 6}, "interval_seconds must be 0-5"),
        ({"times": 3, "down_seconds": "until_result"}, "down_seconds must be 0-5"),
    ],
)
def test_bad_restart_series_are_refused(validator, args, message):
    doc = document(series_plan(**args))
    doc["cases"][0]["assert"] = [{"path": "steps.s.value", "exists": True}]
    with pytest.raises(CatalogueError, match=message):
        parse_document(doc, validator, "selftest.yaml")


def test_a_series_needs_a_sync_point():
    with pytest.raises(sync_points.SyncPlanError, match="times needs at_sync"):
        sync_points.check_plan([{"id": "r", "op": "restart_worker", "args": {"times": 2}}], False)


class FakeControl:
    def __init__(self, fail_at=None):
        self.restarts = []
        self.fail_at = fail_at

    def restart_in_place(self, down_seconds=0.0):
        if self.fail_at is not None and len(self.restarts) + 1 == self.fail_at:
            raise RuntimeError("the worker did not come back")
        time.sleep(0.01)
        self.restarts.append(down_seconds)


class SeriesWorker(FakeWorker):
    def __init__(self, control):
        super().__init__()
        self.control = control


def test_a_series_releases_the_client_at_once_and_reports_every_restart():
    control = FakeControl()
    worker = SeriesWorker(control)
    actions = actions_for(
        {"mode": "term", "times": 5, "interval_seconds": 0.05, "down_seconds": 0.02}, worker
    )
    started = time.monotonic()
    actions.on_sync("w")
    assert time.monotonic() - started < 0.05, "the client is released before the first restart"
    assert worker.calls == [], "no process restart: the worker restarts in place"
    time.sleep(0.5)
    actions.finish()
    assert control.restarts == [0.02] * 5
    reports = actions.with_reports([{"id": "w"}])
    assert reports[1]["id"] == "r"
    assert reports[1]["value"]["restarts"] == 5
    assert reports[1]["value"]["before_result"] == 5
    assert actions.problems == []


def test_restarts_still_to_come_when_the_client_reports_are_not_before_the_result():
    control = FakeControl()
    actions = actions_for({"mode": "term", "times": 4, "interval_seconds": 0.1}, SeriesWorker(control))
    actions.on_sync("w")
    actions.finish()  # the client reported at once
    (report,) = [r for r in actions.with_reports([{"id": "w"}]) if r["id"] == "r"]
    assert report["value"]["restarts"] == 4, "the series still ends before the case does"
    assert report["value"]["before_result"] < 4


def test_a_restart_that_fails_ends_the_series_as_a_problem():
    control = FakeControl(fail_at=2)
    actions = actions_for({"mode": "term", "times": 3}, SeriesWorker(control))
    actions.on_sync("w")
    actions.finish()
    assert len(control.restarts) == 1
    assert any("restart 2 of 3 failed" in p for p in actions.problems)
