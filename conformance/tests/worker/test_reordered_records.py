"""Records reordered, duplicated or moved between streams fail the read (W5).

The intruder edits the journal through SQLite with the append-only triggers
dropped, after the worker verified and remembered the runs. Every variant must
surface as a journal integrity error on the next read, never as a run served
with a different history, while untouched runs are still served.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_engine import PRINCIPAL, _engine, _finished_run
from test_read_checkpoint import _assert_tampering_caught, _frames, _outside

from colossus_reference_worker.errors import ApiError, JournalIntegrityError

SWAP = [  # versions 3 and 4 trade places (three steps: (stream, version) is unique)
    ("UPDATE records SET version = -1 WHERE stream = :s AND version = 3", ()),
    ("UPDATE records SET version = 3 WHERE stream = :s AND version = 4", ()),
    ("UPDATE records SET version = 4 WHERE stream = :s AND version = -1", ()),
]
DUPLICATE_LAST = [(
    "INSERT INTO records (stream, version, kind, payload, prev_hash, hash) "
    "SELECT stream, version + 1, kind, payload, prev_hash, hash FROM records "
    "WHERE stream = :s ORDER BY version DESC LIMIT 1", ())]
DUPLICATE_MIDDLE = [
    ("DELETE FROM records WHERE stream = :s AND version = 5", ()),
    ("INSERT INTO records (stream, version, kind, payload, prev_hash, hash) "
     "SELECT stream, 5, kind, payload, prev_hash, hash FROM records "
     "WHERE stream = :s AND version = 4", ()),
]
TRANSPLANT = [  # the other run's record 4 takes this run's record 4's place
    ("DELETE FROM records WHERE stream = :s AND version = 4", ()),
    ("INSERT INTO records (stream, version, kind, payload, prev_hash, hash) "
     "SELECT :s, version, kind, payload, prev_hash, hash FROM records "
     "WHERE stream = :o AND version = 4", ()),
]
KINDS = {"swap": SWAP, "duplicate-last": DUPLICATE_LAST, "duplicate-middle": DUPLICATE_MIDDLE,
         "transplant": TRANSPLANT}


def _bind(statements, stream: str, other: str):
    return [(sql, {"s": stream, "o": other}) for sql, _ in statements]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_reordered_duplicated_or_moved_records_fail_the_read(tmp_path: Path, kind: str) -> None:
    async def scenario() -> None:
        engine = _engine(tmp_path)
        script = "colossus-script v1\nrepeat 8 say ."
        run_id = await _finished_run(engine, "k", script)
        donor = await _finished_run(engine, "d", script)
        bystander = await _finished_run(engine, "b", "untouched")
        for run in (run_id, donor, bystander):
            engine.get_run(PRINCIPAL, run)
        await _frames(engine, run_id)
        _outside(tmp_path, *_bind(KINDS[kind], f"run:{run_id}", f"run:{donor}"))
        await _assert_tampering_caught(engine, run_id, bystander)
        await engine.shutdown()

    asyncio.run(scenario())


def test_a_reordered_owner_index_fails_the_listing(tmp_path: Path) -> None:
    async def scenario() -> None:
        engine = _engine(tmp_path)
        for key in "abcde":
            await _finished_run(engine, key, "x")
        page, _ = await engine.list_runs(PRINCIPAL, [], 0, "")
        assert len(page) == 3
        _outside(tmp_path, *_bind(SWAP, f"owner:{PRINCIPAL.application_id}", ""))
        with pytest.raises((JournalIntegrityError, ApiError)) as caught:
            await engine.list_runs(PRINCIPAL, [], 0, "")
        if isinstance(caught.value, ApiError):
            assert caught.value.reason == "JOURNAL_INTEGRITY"
        await engine.shutdown()

    asyncio.run(scenario())
