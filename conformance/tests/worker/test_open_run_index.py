"""The index of unfinished runs that recovery visits is sealed with the journal (W5, W13).

Start-up settles only the runs in that index, so it stays fast with many finished runs.
The index is a plain table: a row deleted by hand while the worker was stopped used to
leave a run that was waiting for an answer reporting ``WAITING_FOR_INPUT`` for ever
(W13 wants ``INTERRUPTED``), and nothing noticed. The index now carries a keyed digest of
its members, updated with each run that starts or finishes; a mismatch at start-up is
logged and the index is rebuilt from the (sealed) records.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_helpers import cli, folder_fingerprint

from colossus_reference_worker.journal import Journal

from conftest import pb, script

S = pb.runs
ALTERED = "index of unfinished runs was altered"


@pytest.fixture
def crashed(make_worker):
    """A worker killed with one run waiting for an answer and one finished run."""
    worker = make_worker()
    client = worker.client("app1")
    waiting = client.create("k1", script("ask Colour? | red | blue")).run.run_id
    client.wait_status(waiting, S.RUN_STATUS_WAITING_FOR_INPUT)
    done = client.create("k2", script("say done")).run.run_id
    finished = client.wait_status(done, S.RUN_STATUS_SUCCEEDED)
    worker.kill9()
    return worker, waiting, done, finished.last_sequence


def _edit(worker, statement: str, *params: str) -> None:
    db = sqlite3.connect(worker.state / "journal.sqlite3")
    try:
        assert db.execute(statement, params).rowcount != 0  # -1 for DDL
        db.commit()
    finally:
        db.close()


def test_a_run_removed_from_the_index_is_still_settled(crashed):
    worker, waiting, done, _ = crashed
    _edit(worker, "DELETE FROM open_streams WHERE stream = ?", f"run:{waiting}")
    worker.start()
    client = worker.client("app1")
    assert client.get(waiting).status == S.RUN_STATUS_INTERRUPTED
    assert client.get(done).status == S.RUN_STATUS_SUCCEEDED
    assert ALTERED in worker.log_path.read_text()


def test_a_finished_run_added_to_the_index_is_left_as_it_was(crashed):
    worker, waiting, done, last = crashed
    _edit(worker, "INSERT INTO open_streams (stream) VALUES (?)", f"run:{done}")
    worker.start()
    client = worker.client("app1")
    run = client.get(done)
    assert (run.status, run.last_sequence) == (S.RUN_STATUS_SUCCEEDED, last)
    assert client.get(waiting).status == S.RUN_STATUS_INTERRUPTED
    assert ALTERED in worker.log_path.read_text()


def test_an_untouched_index_is_trusted_without_a_rebuild(crashed):
    worker, waiting, _, _ = crashed
    worker.start()
    assert worker.client("app1").get(waiting).status == S.RUN_STATUS_INTERRUPTED
    assert ALTERED not in worker.log_path.read_text()


def test_the_seal_follows_members_coming_and_going(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    try:
        assert journal.open_index_intact()
        for stream, is_open in (("run:a", True), ("run:b", True), ("run:a", True),
                                ("run:a", False), ("run:c", False)):
            with journal.transaction():
                journal.mark_open(stream, is_open)
            assert journal.open_index_intact(), (stream, is_open)
        assert journal.open_streams("run:") == []  # no records: the index joins them
        journal._db.execute("INSERT INTO open_streams (stream) VALUES ('run:x')")
        assert not journal.open_index_intact()
        journal.reset_open_index()
        assert journal.open_index_intact()
    finally:
        journal.close()


def _one_open_run_then(tmp_path: Path, *statements: str) -> Path:
    """A stopped journal with one open run, then ``statements`` run on its file by hand."""
    path = tmp_path / "journal.sqlite3"
    journal = Journal(path, b"k" * 32)
    with journal.transaction():
        journal.mark_open("run:a", True)
    journal.close()
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()
    return path


def test_a_journal_from_before_the_seal_is_sealed_as_found(tmp_path: Path) -> None:
    path = _one_open_run_then(tmp_path, "DROP TABLE open_seal")
    journal = Journal(path, b"k" * 32)
    try:
        assert journal.open_index_intact()
        assert journal._db.execute("SELECT stream FROM open_streams").fetchall() == [("run:a",)]
    finally:
        journal.close()


def test_a_removed_seal_row_is_not_taken_for_a_journal_from_before_the_seal(
        tmp_path: Path) -> None:
    path = _one_open_run_then(tmp_path, "DELETE FROM open_seal", "DELETE FROM open_streams")
    journal = Journal(path, b"k" * 32)
    try:
        assert not journal.open_index_intact()  # the start-up rebuild follows
    finally:
        journal.close()


def test_journal_verify_names_an_altered_index_and_changes_nothing(crashed):
    worker, waiting, _, _ = crashed
    assert cli("journal", "verify", "--state-dir", str(worker.state)).returncode == 0
    _edit(worker, "DELETE FROM open_streams WHERE stream = ?", f"run:{waiting}")
    before = folder_fingerprint(worker.root)
    out = cli("journal", "verify", "--state-dir", str(worker.state), "--json")
    assert out.returncode == 6, out.stderr
    assert [f["stream"] for f in json.loads(out.stdout)["failures"]] == ["open_streams"]
    listed = cli("runs", "list", "--state-dir", str(worker.state))
    assert listed.returncode == 0 and waiting in listed.stdout, listed.stderr
    assert folder_fingerprint(worker.root) == before


def test_read_only_commands_accept_a_journal_from_before_the_seal(crashed):
    worker, waiting, _, _ = crashed
    _edit(worker, "DROP TABLE open_seal")
    out = cli("journal", "verify", "--state-dir", str(worker.state))
    assert out.returncode == 0, out.stdout + out.stderr
    assert cli("runs", "show", waiting, "--state-dir", str(worker.state)).returncode == 0


def test_a_seal_row_removed_while_serving_does_not_break_the_next_run(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    try:
        with journal.transaction():
            journal.mark_open("run:a", True)
        journal._db.execute("DELETE FROM open_seal")  # behind the worker's back
        with journal.transaction():
            journal.mark_open("run:b", True)  # used to fail on the missing row
        assert not journal.open_index_intact()  # run:a is no longer accounted for
    finally:
        journal.close()
