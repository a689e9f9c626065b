"""Bytes changed inside the journal's files while the worker serves (W5).

The intruder here does not go through SQLite: it rewrites record bytes in the
database file or its write-ahead log, same length, and may put the files'
modification time back. A run verified and remembered before the change must
fail its next read with a journal integrity error, not be answered from memory
or from SQLite's page cache.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from test_engine import PRINCIPAL, _engine, _finished_run
from test_read_checkpoint import _assert_tampering_caught, _frames

GENUINE, FORGED = b"genuine-plan-0001", b"forged!-plan-0001"


def _rewrite(path: Path, *, keep_mtime: bool) -> None:
    """Replace every copy of the genuine text in ``path`` by the forged one, in place."""
    data = path.read_bytes()
    assert GENUINE in data, f"{path.name} holds no copy of the record"
    before = os.stat(path)
    with open(path, "r+b") as f:
        f.write(data.replace(GENUINE, FORGED))
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["mtime-moved", "mtime-restored"])
@pytest.mark.parametrize("where", ["wal", "database"])
def test_raw_rewrite_after_a_verified_read_fails_the_next_read(
        tmp_path: Path, where: str, keep_mtime: bool) -> None:
    async def scenario() -> None:
        engine = _engine(tmp_path)
        run_id = await _finished_run(engine, "k", "colossus-script v1\nsay " + GENUINE.decode())
        other = await _finished_run(engine, "o", "untouched")
        journal = engine.store.journal
        if where == "database":
            journal._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # records into the file
        # Verified once, then remembered: the next GetRun would read no record.
        assert engine.get_run(PRINCIPAL, run_id)[1]["status"] == "SUCCEEDED"
        assert engine.store.trusted(run_id) is not None
        await _frames(engine, run_id)  # the watch frame cache holds the run too
        name = "journal.sqlite3-wal" if where == "wal" else "journal.sqlite3"
        _rewrite(tmp_path / name, keep_mtime=keep_mtime)
        await _assert_tampering_caught(engine, run_id, other)
        await engine.shutdown()

    asyncio.run(scenario())
