"""The journal is on disk before a call is answered (W5).

Whether a commit survives power loss cannot be observed from a test process, so this
checks the setting that decides it: with SQLite's WAL, synchronous=NORMAL would let the
last acknowledged commits vanish on an OS crash, and a planted NORMAL passed the suite.
"""

from __future__ import annotations

from pathlib import Path

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
