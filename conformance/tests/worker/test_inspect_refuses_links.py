"""The read-only commands refuse a state folder whose journal is a link, as ``serve`` does (W5).

``serve`` opens ``journal.sqlite3`` without following links and SQLite refuses a linked
write-ahead log, so a link put in the state folder can never make the worker read or write
another file. ``runs``, ``journal verify`` and ``credentials`` read the same folder; they
used to follow a linked journal and report whatever it pointed at as this worker's runs.
"""

from __future__ import annotations

import pytest
from cli_helpers import cli, folder_fingerprint

from conftest import pb, script

S = pb.runs

READERS = [
    ["runs", "list"], ["runs", "show", "run_x"], ["runs", "watch", "run_x"],
    ["journal", "verify"], ["credentials", "list"], ["credentials", "revoke", "cred_x"],
]


@pytest.fixture
def stopped(make_worker):
    """A stopped worker with one finished run."""
    worker = make_worker()
    client = worker.client("app1")
    run_id = client.create("k1", script("say one")).run.run_id
    client.wait_status(run_id, S.RUN_STATUS_SUCCEEDED)
    worker.stop()
    return worker


@pytest.mark.parametrize("command", READERS, ids=lambda c: "-".join(c[:2]))
def test_a_linked_journal_is_refused_by_every_reader(stopped, command):
    worker = stopped
    journal = worker.state / "journal.sqlite3"
    elsewhere = worker.root / "elsewhere.sqlite3"
    journal.rename(elsewhere)  # a genuine journal, only reached through the link
    journal.symlink_to(elsewhere)
    before = folder_fingerprint(worker.root)
    out = cli(*command, "--state-dir", str(worker.state))
    assert out.returncode == 4, out.stderr  # state folder unsafe
    assert str(journal) in out.stderr and "symbolic link" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert folder_fingerprint(worker.root) == before


def test_a_linked_write_ahead_log_is_refused(stopped):
    worker = stopped
    wal = worker.state / "journal.sqlite3-wal"
    wal.unlink(missing_ok=True)
    outside = worker.root / "outside.bin"
    outside.write_bytes(b"not this worker's log\n" * 64)
    wal.symlink_to(outside)
    before = folder_fingerprint(worker.root)
    out = cli("runs", "list", "--state-dir", str(worker.state))
    assert out.returncode == 4, out.stderr
    assert str(wal) in out.stderr and "symbolic link" in out.stderr
    assert folder_fingerprint(worker.root) == before


def test_a_journal_swapped_for_a_link_while_serving_is_refused(make_worker):
    # While a worker serves, the readers open its journal in place (SQLite's read-only
    # mode), which follows links; the entry must be checked around that open.
    worker = make_worker()
    client = worker.client("app1")
    run_id = client.create("k1", script("say one")).run.run_id
    client.wait_status(run_id, S.RUN_STATUS_SUCCEEDED)
    journal = worker.state / "journal.sqlite3"
    copy = worker.root / "copy.sqlite3"
    copy.write_bytes(journal.read_bytes())
    moved = worker.state / "journal.moved"
    journal.rename(moved)  # the worker keeps its open file; the name now leads elsewhere
    journal.symlink_to(copy)
    try:
        out = cli("runs", "list", "--state-dir", str(worker.state))
        assert out.returncode == 4, out.stderr
        assert str(journal) in out.stderr and "symbolic link" in out.stderr
    finally:
        journal.unlink()
        moved.rename(journal)
    # The worker never noticed: it still answers from its own journal.
    assert client.get(run_id).status == S.RUN_STATUS_SUCCEEDED
