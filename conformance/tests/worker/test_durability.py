"""Journal durability and recovery: W5, W12, W13 and the event caps."""

from __future__ import annotations

import sqlite3
import uuid

import grpc

from colossus_reference_worker.config import WorkerConfig
from colossus_reference_worker.server import open_workspace

from conftest import ROOMY, expect_error, pb, script

S = pb.runs
OK = grpc.StatusCode
ROOMY_ARGS = [a for item in ROOMY for a in ("--limit", item)]


def test_restart_keeps_runs_claims_and_index(make_worker):
    worker = make_worker(*ROOMY_ARGS)
    c = worker.client("app1")
    done = c.create("k-done", "persist me").run
    c.wait_status(done.run_id, S.RUN_STATUS_SUCCEEDED)
    before = c.get(done.run_id)
    events = c.watch(done.run_id)
    worker.restart()
    c = worker.client("app1")
    assert c.get(done.run_id) == before
    assert c.watch(done.run_id) == events
    replay = c.create("k-done", "persist me")
    assert replay.replayed and replay.run.run_id == done.run_id
    expect_error(lambda: c.create("k-done", "other"), OK.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")
    listed = c.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=c.md).runs
    assert [r.run_id for r in listed] == [done.run_id]


def test_recovery_after_kill9(make_worker):
    worker = make_worker(*ROOMY_ARGS)
    c = worker.client("app1")
    waiting = c.create("w", script("say before", "ask Continue? | yes | no")).run
    effect = c.create("e", script("effect", "sleep forever")).run
    sleeping = c.create("s", script("say one", "sleep 1500", "say two")).run
    c.wait_status(waiting.run_id, S.RUN_STATUS_WAITING_FOR_INPUT)
    c.wait_status(effect.run_id, S.RUN_STATUS_RUNNING)
    c.wait_status(sleeping.run_id, S.RUN_STATUS_RUNNING)
    worker.kill9()
    worker.start()
    c = worker.client("app1")
    interrupted = c.get(waiting.run_id)
    assert interrupted.status == S.RUN_STATUS_INTERRUPTED
    assert interrupted.result.output_text == "before"
    kinds = [e.WhichOneof("payload") for e in c.watch(waiting.run_id)]
    assert kinds[-2:] == ["interaction_resolved", "terminated"]
    assert c.get(effect.run_id).status == S.RUN_STATUS_OUTCOME_UNKNOWN
    resumed = c.wait_status(sleeping.run_id, S.RUN_STATUS_SUCCEEDED)
    assert resumed.result.output_text == "onetwo"
    outputs = [e.output_delta.text for e in c.watch(sleeping.run_id)
               if e.HasField("output_delta")]
    assert outputs == ["one", "two"]  # nothing re-emitted


def test_queued_run_resumes_under_its_accepted_authority(make_worker):
    worker = make_worker(*ROOMY_ARGS)
    c = worker.client("app1")
    run = c.create("q", script("sleep 800", "tool shell.run")).run
    worker.stop()
    # Revoking every credential of the application does not weaken accepted work.
    ws = open_workspace(WorkerConfig(state_dir=worker.state))
    try:
        for cred in ws.credentials.all():
            ws.credentials.revoke(cred.credential_id)
    finally:
        ws.close()
    worker.enroll("app1", label="fresh", scopes=("runs:read",))
    worker.start()
    c = worker.client("fresh")
    final = c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    tool = [e.tool_activity.phase for e in c.watch(final.run_id) if e.HasField("tool_activity")]
    assert tool == [S.TOOL_ACTIVITY_PHASE_STARTED, S.TOOL_ACTIVITY_PHASE_COMPLETED]


def _tamper(worker, run_id):
    db = sqlite3.connect(worker.state / "journal.sqlite3")
    db.execute("DROP TRIGGER records_no_update")
    db.execute("UPDATE records SET payload = replace(payload, 'secret-plan', 'forged-plan') "
               "WHERE stream = ?", (f"run:{run_id}",))
    db.commit()
    db.close()


def test_tampered_journal_fails_loudly(make_worker):
    worker = make_worker(*ROOMY_ARGS)
    c = worker.client("app1")
    run = c.create("t", script("say secret-plan")).run
    c.wait_status(run.run_id, S.RUN_STATUS_SUCCEEDED)
    other = c.create("u", "untouched").run
    c.wait_status(other.run_id, S.RUN_STATUS_SUCCEEDED)
    worker.stop()
    _tamper(worker, run.run_id)
    worker.start()
    c = worker.client("app1")
    for call in (lambda: c.get(run.run_id), lambda: c.watch(run.run_id),
                 lambda: c.runs.ListRuns(pb.rs.ListRunsRequest(page_size=3), metadata=c.md),
                 lambda: c.cancel(run.run_id)):
        expect_error(call, OK.DATA_LOSS, "JOURNAL_INTEGRITY")
    assert c.get(other.run_id).status == S.RUN_STATUS_SUCCEEDED
    log = worker.log_path.read_text()
    assert "forged-plan" not in log


def test_event_cap_leaves_a_finishable_run(make_worker):
    worker = make_worker(*ROOMY_ARGS)
    c = worker.client("app1")
    # 1 RUNNING + 4093 deltas + WAITING + the prompt = 4096 ordinary events.
    run = c.create("cap", script("repeat 4093 say .", "ask Stop? | yes")).run
    stream = c.runs.WatchRun(pb.rs.WatchRunRequest(run_id=run.run_id), metadata=c.md,
                             timeout=60)
    for response in stream:
        if response.event.HasField("interaction_requested"):
            stream.cancel()
            break
    assert c.get(run.run_id).last_sequence == 4096
    c.cancel(run.run_id)
    final = c.wait_status(run.run_id, S.RUN_STATUS_CANCELLED)
    assert final.last_sequence == 4099
    events = c.watch(run.run_id, timeout=60)
    assert len(events) == 4099 and events[-1].terminated.status == S.RUN_STATUS_CANCELLED
    listed = c.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=c.md).runs
    assert listed[0].run_id == run.run_id
    # A run that keeps talking past the cap fails with a reserved terminal event.
    long = c.create("long", script("repeat 5000 say .")).run
    c.watch(long.run_id, after=4000, timeout=60)  # returns after the terminal event
    failed = c.get(long.run_id)
    assert failed.result.failure.code == "event_limit" and failed.last_sequence == 4097


def test_journal_is_append_only(make_worker):
    worker = make_worker()
    worker.stop()
    db = sqlite3.connect(worker.state / "journal.sqlite3")
    for sql in ("UPDATE records SET kind = 'x'", "DELETE FROM records"):
        try:
            db.execute(sql)
        except sqlite3.DatabaseError as exc:
            assert "append-only" in str(exc)
        else:
            raise AssertionError(sql)
    db.close()
    assert uuid is not None


def test_effect_then_crash_is_outcome_unknown(make_worker):
    worker = make_worker("--allow-crash-step", *ROOMY_ARGS)
    c = worker.client("app1")
    run = c.create("crash", script("say about to", "effect", "crash")).run
    assert worker.proc is not None
    assert worker.proc.wait(15) != 0  # the worker died abruptly
    worker.proc = None
    worker.start()
    c = worker.client("app1")
    final = c.get(run.run_id)
    assert final.status == S.RUN_STATUS_OUTCOME_UNKNOWN
    assert final.result.output_text == "about to"
    # Without the flag the step only fails the run.
    worker.stop()
    worker.args = tuple(a for a in worker.args if a != "--allow-crash-step")
    worker.start()
    c = worker.client("app1")
    other = c.create("no-crash", script("crash")).run
    failed = c.wait_status(other.run_id, S.RUN_STATUS_FAILED)
    assert failed.result.failure.code == "crash_disabled"
