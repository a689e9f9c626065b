"""Issue 12: reads verified once then trusted, cached watch frames, the open-run index.

In-process, so the number of records whose hash was checked is visible. Every
test that trusts a checkpoint or a cache also alters the journal from another
SQLite connection afterwards and shows the next read still fails.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import grpc
import pytest
from test_engine import PRINCIPAL, _engine, _finished_run

from colossus_reference_worker._gen.colossus.api.v1alpha1 import CreateRunRequest, InputPart
from colossus_reference_worker.engine.engine import RunEngine
from colossus_reference_worker.engine.frames import FrameCache
from colossus_reference_worker.engine.runs import RunStore
from colossus_reference_worker.engine.watch_encoding import encode_watch_response
from colossus_reference_worker.errors import JournalIntegrityError
from colossus_reference_worker.journal import Journal


def _long(size: int) -> str:
    return f"colossus-script v1\nrepeat {size} say ."


def _outside(tmp_path: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    """Alter the journal the way an intruder would: another connection, triggers dropped."""
    db = sqlite3.connect(tmp_path / "journal.sqlite3")
    db.execute("DROP TRIGGER IF EXISTS records_no_update")
    db.execute("DROP TRIGGER IF EXISTS records_no_delete")
    for query, params in statements:
        db.execute(query, params)
    db.commit()
    db.close()


def _verified_by(engine: RunEngine, call: object) -> int:
    journal = engine.store.journal
    before = journal.records_verified
    call()  # type: ignore[operator]
    return journal.records_verified - before


async def _frames(engine: RunEngine, run_id: str, after: int = 0) -> list[bytes]:
    out: list[bytes] = []
    async for batch in engine.watch_frames(run_id, after):
        out.extend(batch)
    return out


async def _assert_tampering_caught(engine: RunEngine, run_id: str, bystander: str) -> None:
    """The altered run fails GetRun and a replay alike; another run is still served."""
    with pytest.raises(JournalIntegrityError):
        engine.get_run(PRINCIPAL, run_id)
    with pytest.raises(JournalIntegrityError):
        await _frames(engine, run_id)
    assert engine.get_run(PRINCIPAL, bystander)[1]["status"] == "SUCCEEDED"


def test_get_run_verifies_history_once_then_only_the_tail(tmp_path: Path) -> None:
    async def produce() -> str:
        engine = _engine(tmp_path)
        run_id = await _finished_run(engine, "k", _long(500))
        await engine.shutdown()
        engine.store.journal.close()
        return run_id

    run_id = asyncio.run(produce())

    async def scenario() -> None:
        engine = _engine(tmp_path)  # a new process: nothing of the run was verified yet
        first = _verified_by(engine, lambda: engine.get_run(PRINCIPAL, run_id))
        again = _verified_by(engine, lambda: engine.get_run(PRINCIPAL, run_id))
        assert first > 500
        assert again < 10
        await engine.shutdown()

    asyncio.run(scenario())


def test_a_run_produced_here_is_polled_without_reading_its_records(tmp_path: Path) -> None:
    """The append path keeps the checkpoint current, so GetRun during production reads
    nothing back, answers with the state just recorded, and still notices tampering."""
    async def scenario() -> None:
        engine = _engine(tmp_path)
        creation, _, _ = engine.create_run(PRINCIPAL, CreateRunRequest(
            idempotency_key="k", input=[InputPart(text=_long(300))]))
        run_id = creation["run_id"]
        seen = []
        while not seen or seen[-1]["status"] != "SUCCEEDED":
            checked = _verified_by(engine, lambda: seen.append(engine.get_run(PRINCIPAL,
                                                                              run_id)[1]))
            assert checked == 0
            await asyncio.sleep(0.005)
        sequences = [state["last_sequence"] for state in seen]
        assert len(set(sequences)) > 2 and sequences == sorted(sequences)
        full = engine.store.full(run_id)  # every record read and checked again
        assert full is not None and full.state == seen[-1]
        _outside(tmp_path, ("UPDATE records SET payload = replace(payload, '\".\"', '\"!\"') "
                            "WHERE stream = ? AND version = 3", (f"run:{run_id}",)))
        with pytest.raises(JournalIntegrityError):
            engine.get_run(PRINCIPAL, run_id)
        await engine.shutdown()

    asyncio.run(scenario())


def test_an_outside_change_during_production_is_not_absorbed_by_the_next_append(
        tmp_path: Path) -> None:
    """An intruder's commit followed by one of the worker's own appends still counts as
    an outside change: the worker's commit must not adopt it as its own."""
    async def scenario() -> None:
        engine = _engine(tmp_path)
        creation, _, _ = engine.create_run(PRINCIPAL, CreateRunRequest(
            idempotency_key="k", input=[InputPart(
                text="colossus-script v1\nrepeat 20 say .\nsleep forever")]))
        run_id = creation["run_id"]
        while engine.get_run(PRINCIPAL, run_id)[1]["last_sequence"] < 21:
            await asyncio.sleep(0.005)
        _outside(tmp_path, ("UPDATE records SET payload = replace(payload, '\".\"', '\"!\"') "
                            "WHERE stream = ? AND version = 3", (f"run:{run_id}",)))
        engine.cancel_run(PRINCIPAL, run_id)  # the worker appends after the intrusion
        with pytest.raises(JournalIntegrityError):
            engine.get_run(PRINCIPAL, run_id)
        await engine.shutdown()

    asyncio.run(scenario())


@pytest.mark.parametrize("change", ["rewrite", "truncate"])
def test_an_outside_change_after_the_checkpoint_fails_the_next_read(
        tmp_path: Path, change: str) -> None:
    async def scenario() -> None:
        engine = _engine(tmp_path)
        run_id = await _finished_run(engine, "k", _long(50))
        other = await _finished_run(engine, "o", _long(5))
        engine.get_run(PRINCIPAL, run_id)
        await _frames(engine, run_id)  # fills the frame cache too
        stream = f"run:{run_id}"
        if change == "rewrite":  # an early record, long since verified
            _outside(tmp_path, ("UPDATE records SET payload = replace(payload, '\".\"', '\"!\"') "
                                "WHERE stream = ? AND version = 3", (stream,)))
        else:
            _outside(tmp_path, ("DELETE FROM records WHERE stream = ? AND version > 40", (stream,)))
        # Other runs are still served, verified again from their first record.
        await _assert_tampering_caught(engine, run_id, other)
        await engine.shutdown()

    asyncio.run(scenario())


def test_cached_frames_equal_the_encoded_journal_and_skip_the_hash_checks(tmp_path: Path) -> None:
    async def scenario() -> None:
        engine = _engine(tmp_path)
        run_id = await _finished_run(engine, "k", _long(300))
        full = engine.store.full(run_id)
        assert full is not None
        expected = [encode_watch_response(run_id, e) for e in full.events]
        assert await _frames(engine, run_id) == expected
        journal = engine.store.journal
        before = journal.records_verified
        assert await _frames(engine, run_id) == expected
        assert await _frames(engine, run_id, after=250) == expected[250:]
        assert journal.records_verified - before < 10
        assert engine.frames.size <= engine.frames.max_bytes
        await engine.shutdown()

    asyncio.run(scenario())


def test_a_live_watch_gets_every_frame_in_order(tmp_path: Path) -> None:
    async def scenario() -> None:
        engine = _engine(tmp_path)
        creation, _, _ = engine.create_run(PRINCIPAL, CreateRunRequest(
            idempotency_key="k", input=[InputPart(
                text="colossus-script v1\nrepeat 200 say .\nsleep 50\nrepeat 200 say .")]))
        run_id = creation["run_id"]
        frames = await _frames(engine, run_id)  # starts before the run has output
        full = engine.store.full(run_id)
        assert full is not None
        assert frames == [encode_watch_response(run_id, e) for e in full.events]
        await engine.shutdown()

    asyncio.run(scenario())


def test_frame_cache_stays_within_its_byte_bound() -> None:
    cache = FrameCache(10_000)
    for run in range(20):
        frames = [b"x" * 100] * 20
        cache.extend(f"r{run}", 1, frames, [bytes(32)] * 20, epoch=0)
        assert cache.size <= 10_000
    assert cache.slice("r19", 1, 20, bytes(32), epoch=0) == [b"x" * 100] * 20
    assert cache.slice("r0", 1, 20, bytes(32), epoch=0) is None  # evicted
    assert cache.slice("r19", 1, 20, b"\1" * 32, epoch=0) is None  # wrong anchor drops it
    assert cache.slice("r19", 1, 1, bytes(32), epoch=0) is None
    cache.extend("r1", 1, [b"y"], [bytes(32)], epoch=0)
    assert cache.slice("r1", 1, 1, bytes(32), epoch=1) is None  # another trust epoch


def test_start_up_visits_only_unfinished_runs(tmp_path: Path) -> None:
    async def scenario() -> tuple[str, str]:
        engine = _engine(tmp_path)
        done = await _finished_run(engine, "d", _long(3))
        held = await _finished_run(engine, "h", "colossus-script v1\nsleep forever")
        assert engine.store.live_run_ids() == [held]
        engine.drivers[held].task.cancel()  # type: ignore[union-attr]
        engine.store.journal.close()
        return done, held

    done, held = asyncio.run(scenario())
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    store = RunStore(journal, 1000, 10)
    assert store.live_run_ids() == [held]
    assert done in store.all_run_ids()
    journal.close()
    # A journal from before the index: the index is rebuilt from a full scan, once.
    db = sqlite3.connect(tmp_path / "journal.sqlite3")
    db.execute("DROP TABLE open_streams")
    db.commit()
    db.close()
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    assert journal.open_index_created
    assert RunStore(journal, 1000, 10).live_run_ids() == [held]
    journal.close()


def test_a_damaged_head_found_at_start_up_is_logged_after_serving_begins(make_worker) -> None:
    from conftest import ROOMY, expect_error, script

    worker = make_worker(*(a for item in ROOMY for a in ("--limit", item)))
    c = worker.client("app1")
    run = c.create("t", script("say hello")).run
    c.watch(run.run_id)
    worker.stop()
    db = sqlite3.connect(worker.state / "journal.sqlite3")
    db.execute("UPDATE heads SET seal = zeroblob(32) WHERE stream = ?", (f"run:{run.run_id}",))
    db.commit()
    db.close()
    worker.start()
    c = worker.client("app1")
    expect_error(lambda: c.get(run.run_id), grpc.StatusCode.DATA_LOSS, "JOURNAL_INTEGRITY")
    deadline = time.monotonic() + 20
    message = f"journal stream run:{run.run_id} does not end at its sealed head"
    while message not in worker.log_path.read_text():
        assert time.monotonic() < deadline, "the damaged head was never logged"
        time.sleep(0.05)


def test_commit_callbacks_run_only_after_a_commit_and_never_fail_it(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    called: list[int] = []

    def failing() -> None:
        raise RuntimeError("a cache's bookkeeping failed")

    with journal.transaction():
        first = journal.append("s", 1, "k", {"n": 1}, None)
        journal.after_commit(failing)
        journal.after_commit(lambda: called.append(1))
    assert called == [1]  # the one after the failing callback still ran
    assert journal.head("s") == first  # and the write stands
    with pytest.raises(RuntimeError, match="abandoned"), journal.transaction():
        journal.append("s", 2, "k", {"n": 2}, first)
        journal.after_commit(lambda: called.append(2))
        raise RuntimeError("abandoned")
    assert called == [1]
    assert journal.head("s") == first
    journal.close()
