"""The journal is on disk before a call is answered (W5).

Whether a commit survives power loss cannot be observed from a test process, so this
checks the setting that decides it: with SQLite's WAL, synchronous=NORMAL would let the
last acknowledged commits vanish on an OS crash, and a planted NORMAL passed the suite.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from colossus_reference_worker.errors import JournalIntegrityError
from colossus_reference_worker.journal import Journal

_FULL = 2  # PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA


def test_every_commit_is_synced_to_disk(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    try:
        db = journal._db
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA synchronous").fetchone()[0] >= _FULL
    finally:
        journal.close()


def _row(path: Path, stream: str, version: int) -> tuple[object, ...]:
    db = sqlite3.connect(path)
    try:
        row: tuple[object, ...] = db.execute(
            "SELECT kind, payload, prev_hash, hash FROM records WHERE stream = ? AND version = ?",
            (stream, version)).fetchone()
        return row
    finally:
        db.close()


def test_a_record_spliced_in_from_a_diverged_copy_breaks_the_chain(tmp_path: Path) -> None:
    # W5: two copies of one journal (a backup restored, say) that went on differently
    # hold, under the same key, genuine records for the same stream and version. Moving
    # one across keeps its own hash valid and its link to the record before it; only the
    # next record's link notices. A planted read that skipped the link check served it.
    key = b"k" * 32
    live, copy = tmp_path / "live.sqlite3", tmp_path / "copy.sqlite3"
    journal = Journal(live, key)
    first = journal.append("run:x", 1, "run.created", {"n": 1}, None)
    second = journal.append("run:x", 2, "run.event", {"n": 2}, first)
    journal.close()
    shutil.copyfile(live, copy)
    for path, text in ((live, "live"), (copy, "copy")):
        journal = Journal(path, key)
        third = journal.append("run:x", 3, "run.event", {"n": 3, "text": text}, second)
        journal.append("run:x", 4, "run.event", {"n": 4, "text": text}, third)
        journal.close()
    kind, payload, prev_hash, digest = _row(copy, "run:x", 3)
    db = sqlite3.connect(live)
    db.execute("DROP TRIGGER IF EXISTS records_no_update")
    db.execute("UPDATE records SET kind = ?, payload = ?, prev_hash = ?, hash = ? "
               "WHERE stream = 'run:x' AND version = 3", (kind, payload, prev_hash, digest))
    db.commit()
    db.close()
    journal = Journal(live, key)
    try:
        with pytest.raises(JournalIntegrityError):
            list(journal.read_stream("run:x"))
        with pytest.raises(JournalIntegrityError):
            journal.range("run:x", 1, 4)
    finally:
        journal.close()
