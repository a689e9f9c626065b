"""``runs list|show|watch``, ``journal verify`` and ``credentials list`` read the state
folder without writing to it, whether the worker is stopped or serving (issue 13)."""

from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest
from cli_helpers import CLI, cli, cli_json, folder_fingerprint

from conftest import pb, script

S = pb.runs


@pytest.fixture
def finished(make_worker):
    """A stopped worker whose folder holds two finished runs of two applications."""
    worker = make_worker()
    one = worker.client("app1").create("k1", script("say one", "say two")).run.run_id
    two = worker.client("app2").create("k2", script("fail boom broken")).run.run_id
    worker.client("app1").wait_status(one, S.RUN_STATUS_SUCCEEDED)
    worker.client("app2").wait_status(two, S.RUN_STATUS_FAILED)
    worker.stop()
    return worker, one, two


def test_runs_list_and_show_of_a_stopped_worker_write_nothing(finished):
    worker, one, two = finished
    before = folder_fingerprint(worker.root)
    rows = {row["run_id"]: row for row in cli_json("runs", "list", "--public-api-dir",
                                                   str(worker.public))}
    assert rows[one]["application_id"] == "app1" and rows[one]["status"] == "SUCCEEDED"
    assert rows[two]["application_id"] == "app2" and rows[two]["status"] == "FAILED"
    # RUNNING, two outputs and the termination.
    assert rows[one]["events"] == 4
    only = cli_json("runs", "list", "--public-api-dir", str(worker.public),
                    "--application", "app2", "--status", "FAILED")
    assert [row["run_id"] for row in only] == [two]
    (shown,) = cli_json("runs", "show", one, "--state-dir", str(worker.state))
    assert shown["output_text"] == "onetwo"
    assert [e["sequence"] for e in shown["events"]] == [1, 2, 3, 4]
    assert shown["events"][-1]["event"] == {"type": "terminated", "status": "SUCCEEDED",
                                            "result": {"output_text": "onetwo"}}
    text = cli("runs", "show", one, "--public-api-dir", str(worker.public))
    assert text.returncode == 0 and "status: SUCCEEDED" in text.stdout
    assert "terminated SUCCEEDED" in text.stdout
    watched = cli("runs", "watch", one, "--public-api-dir", str(worker.public), "--after", "2")
    assert watched.returncode == 0, watched.stderr
    assert [line.split()[0] for line in watched.stdout.splitlines()] == ["3", "4"]
    assert cli("journal", "verify", "--public-api-dir", str(worker.public)).returncode == 0
    creds = cli_json("credentials", "list", "--public-api-dir", str(worker.public))
    assert {c["application_id"] for c in creds} == {"app1", "app2"}
    assert folder_fingerprint(worker.root) == before


def test_inspection_while_the_worker_serves(make_worker):
    worker = make_worker()
    client = worker.client("app1")
    run_id = client.create("k", script("say hi", "sleep forever")).run.run_id
    client.wait_status(run_id, S.RUN_STATUS_RUNNING)
    rows = cli_json("runs", "list", "--public-api-dir", str(worker.public))
    assert [(r["run_id"], r["status"]) for r in rows] == [(run_id, "RUNNING")]
    (report,) = cli_json("journal", "verify", "--public-api-dir", str(worker.public))
    assert report["ok"] and report["worker_serving"] and report["runs"] == 1
    watch = subprocess.Popen([*CLI, "runs", "watch", run_id, "--public-api-dir",
                              str(worker.public), "--json", "--interval", "0.1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watch.stdout is not None
        first = [watch.stdout.readline() for _ in range(2)]  # RUNNING, then "hi"
        assert all(first), watch.stderr.read() if watch.stderr else ""
        client.cancel(run_id)
        rest, err = watch.communicate(timeout=30)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert watch.returncode == 0, err
    assert '"status": "CANCELLED"' in rest.splitlines()[-1]
    # The worker's own lock and files are untouched: it keeps serving.
    assert client.get(run_id).status == S.RUN_STATUS_CANCELLED


def test_unknown_and_malformed_run_ids(finished):
    worker, _, _ = finished
    before = folder_fingerprint(worker.root)
    for command in ("show", "watch"):
        out = cli("runs", command, "run_doesnotexist", "--public-api-dir", str(worker.public))
        assert out.returncode == 7, out.stderr
        assert "run_doesnotexist" in out.stderr and str(worker.state) in out.stderr
        bad = cli("runs", command, "no/such", "--public-api-dir", str(worker.public))
        assert bad.returncode == 2 and "'no/such'" in bad.stderr
    assert folder_fingerprint(worker.root) == before


@pytest.mark.parametrize("command", [
    ["runs", "list"], ["runs", "show", "run_x"], ["runs", "watch", "run_x"],
    ["journal", "verify"], ["credentials", "list"], ["credentials", "revoke", "cred_x"],
    ["credentials", "rotate", "cred_x", "--bearer-fd", "1"],
])
def test_missing_foreign_and_unsafe_folders(tmp_path, command):
    tmp_path.chmod(0o700)
    missing = tmp_path / "missing"
    out = cli(*command, "--state-dir", str(missing))
    assert out.returncode == 4 and str(missing) in out.stderr and "does not exist" in out.stderr
    assert not missing.exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    (foreign / "notes.txt").write_text("mine")
    out = cli(*command, "--state-dir", str(foreign))
    assert out.returncode == 4 and "not a reference worker state folder" in out.stderr
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o755)
    open_folder.chmod(0o755)
    out = cli(*command, "--state-dir", str(open_folder))
    assert out.returncode == 4 and "mode 0700" in out.stderr and str(open_folder) in out.stderr
    assert out.stderr.count("\n") == 1
    usage = cli(*command)
    assert usage.returncode == 2 and "--public-api-dir" in usage.stderr


def test_journal_verify_names_a_tampered_run(finished):
    worker, one, two = finished
    db = sqlite3.connect(worker.state / "journal.sqlite3")
    db.execute("DROP TRIGGER records_no_update")
    db.execute("UPDATE records SET payload = replace(payload, 'one', 'ONE') "
               "WHERE stream = ? AND version > 1", (f"run:{one}",))
    db.commit()
    db.close()
    before = folder_fingerprint(worker.root)
    out = cli("journal", "verify", "--public-api-dir", str(worker.public), "--json")
    assert out.returncode == 6, out.stderr
    report = json.loads(out.stdout)
    assert not report["ok"]
    assert [f["stream"] for f in report["failures"]] == [f"run:{one}"]
    shown = cli("runs", "show", one, "--public-api-dir", str(worker.public))
    assert shown.returncode == 6 and "integrity" in shown.stderr
    listed = cli("runs", "list", "--public-api-dir", str(worker.public))
    assert listed.returncode == 6 and one in listed.stderr
    assert cli("runs", "show", two, "--public-api-dir", str(worker.public)).returncode == 0
    assert folder_fingerprint(worker.root) == before


def test_every_command_has_examples_and_exit_codes():
    commands = [["serve"], ["dev"], ["enroll"], ["credentials", "list"],
                ["credentials", "rotate"], ["credentials", "revoke"], ["runs", "list"],
                ["runs", "show"], ["runs", "watch"], ["journal", "verify"]]
    for command in commands:
        out = cli(*command, "--help")
        assert out.returncode == 0, (command, out.stderr)
        assert "examples:" in out.stdout and "exit codes:" in out.stdout, command
        assert "7 no such run" in out.stdout
    top = cli("--help")
    assert top.returncode == 0 and "dev" in top.stdout and "--enroll-application" in top.stdout
    assert cli().returncode == 2


def test_watch_of_a_stopped_unfinished_run_waits_for_the_worker(make_worker):
    worker = make_worker()
    client = worker.client("app1")
    run_id = client.create("k", script("say hi", "ask Go on? | yes")).run.run_id
    client.wait_status(run_id, S.RUN_STATUS_WAITING_FOR_INPUT)
    worker.stop()  # graceful: the run keeps waiting on its question
    watch = subprocess.Popen([*CLI, "runs", "watch", run_id, "--public-api-dir",
                              str(worker.public), "--interval", "0.1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watch.stderr is not None
        line = watch.stderr.readline()
        assert "not running" in line
        assert watch.poll() is None
        worker.start()
        worker.client("app1").cancel(run_id)
        out, _ = watch.communicate(timeout=30)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert watch.returncode == 0
    assert out.splitlines()[-1].split()[2:] == ["terminated", "CANCELLED"]


def test_read_only_journal_keeps_every_attribute_of_a_journal(tmp_path):
    """ReadOnlyJournal skips Journal.__init__ (which writes); it must still set all it sets."""
    from colossus_reference_worker.commands.snapshot import ReadOnlyJournal
    from colossus_reference_worker.journal import Journal

    path = tmp_path / "journal.sqlite3"
    key = b"k" * 32
    writable = Journal(path, key)
    read_only = ReadOnlyJournal(path, key, uri=path.as_uri() + "?mode=ro")
    try:
        assert set(vars(read_only)) == set(vars(writable))
    finally:
        read_only.close()
        writable.close()


@pytest.mark.parametrize(("argv", "flag"), [
    (["runs", "watch", "run_x", "--after", "-1"], "--after"),
    (["runs", "watch", "run_x", "--interval", "nan"], "--interval"),  # time.sleep(nan) raised
    (["runs", "watch", "run_x", "--interval", "inf"], "--interval"),
    (["runs", "list", "--application", "a b"], "--application"),  # listed nothing, exit 0
])
def test_bad_inspection_flags_are_usage_errors_naming_the_flag(tmp_path, argv, flag):
    out = cli(*argv, "--state-dir", str(tmp_path / "state"))
    assert out.returncode == 2, out.stderr
    assert flag in out.stderr and out.stderr.count("\n") == 1 and out.stdout == ""
    assert not (tmp_path / "state").exists()
