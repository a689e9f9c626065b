"""Active-run slots (W11, W13): every terminal path frees one, every resumed run holds one.

The worker runs with one active run per application, so each step below shows
whether a slot is held by trying one more create.
"""

from __future__ import annotations

import grpc

from conftest import ROOMY, expect_error, pb, script

S = pb.runs
ONE_EACH = [a for item in ROOMY for a in ("--limit", item)] + [
    "--limit", "max_active_runs_per_application=1"]


def _refused(client, key: str) -> None:
    meta = expect_error(lambda: client.create(key, script("sleep forever")),
                        grpc.StatusCode.RESOURCE_EXHAUSTED, "ACTIVE_RUN_LIMIT")
    assert meta["limit"] == "max_active_runs_per_application"


def test_every_terminal_status_frees_the_slot(make_worker):
    worker = make_worker(*ONE_EACH)
    c = worker.client("app1")
    failed = c.create("fails", script("say partial", "fail boom it broke")).run.run_id
    assert c.wait_status(failed, S.RUN_STATUS_FAILED).status == S.RUN_STATUS_FAILED
    held = c.create("held", script("sleep forever")).run.run_id
    _refused(c, "over1")
    c.cancel(held)
    c.wait_status(held, S.RUN_STATUS_CANCELLED)
    asked = c.create("asks", script("ask Go on? | yes | no", "say done")).run.run_id
    c.wait_status(asked, S.RUN_STATUS_WAITING_FOR_INPUT)
    _refused(c, "over2")  # a run waiting for an answer still holds its slot
    c.cancel(asked)
    c.wait_status(asked, S.RUN_STATUS_CANCELLED)
    done = c.create("succeeds", "hello").run.run_id
    c.wait_status(done, S.RUN_STATUS_SUCCEEDED)
    assert c.create("last", script("sleep forever")).run.run_id


def test_recovered_runs_hold_their_slot_and_settled_ones_do_not(make_worker):
    worker = make_worker(*ONE_EACH, apps=("app1", "app2", "app3"))
    c1, c2, c3 = (worker.client(app) for app in ("app1", "app2", "app3"))
    resumed = c1.create("resumes", script("sleep forever")).run.run_id
    waiting = c2.create("waits", script("ask Go on? | yes | no", "say done")).run.run_id
    effect = c3.create("effect", script("effect", "sleep forever")).run.run_id
    c1.wait_status(resumed, S.RUN_STATUS_RUNNING)
    c2.wait_status(waiting, S.RUN_STATUS_WAITING_FOR_INPUT)
    c3.wait_status(effect, S.RUN_STATUS_RUNNING)
    worker.kill9()
    worker.start()
    c1, c2, c3 = (worker.client(app) for app in ("app1", "app2", "app3"))
    assert c1.get(resumed).status == S.RUN_STATUS_RUNNING
    _refused(c1, "over")  # the resumed run counts against its application again
    # Runs settled by recovery hold nothing.
    assert c2.get(waiting).status == S.RUN_STATUS_INTERRUPTED
    assert c2.create("after", "hello").run.run_id
    assert c3.get(effect).status == S.RUN_STATUS_OUTCOME_UNKNOWN
    assert c3.create("after", "hello").run.run_id
    c1.cancel(resumed)
    c1.wait_status(resumed, S.RUN_STATUS_CANCELLED)
    assert c1.create("after", "hello").run.run_id


def test_a_question_kept_over_a_graceful_stop_keeps_its_slot(make_worker):
    worker = make_worker(*ONE_EACH)
    c = worker.client("app1")
    waiting = c.create("waits", script("ask Go on? | yes | no", "say done")).run.run_id
    c.wait_status(waiting, S.RUN_STATUS_WAITING_FOR_INPUT)
    worker.restart()  # SIGTERM: the question stays open
    c = worker.client("app1")
    assert c.get(waiting).status == S.RUN_STATUS_WAITING_FOR_INPUT
    _refused(c, "over")
    c.cancel(waiting)
    c.wait_status(waiting, S.RUN_STATUS_CANCELLED)
    assert c.create("after", "hello").run.run_id
