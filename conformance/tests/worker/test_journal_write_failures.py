"""A journal that cannot take a write, while serving or at start-up (W5).

SQLite's ``query_only`` switch makes every write of the worker's own connection
fail with SQLITE_READONLY, as a file system remounted read-only would, but
deterministically and without mounts. The caller must get a retryable
``UNAVAILABLE`` that says the journal cannot be written (not ``INTERNAL``), and
once writes work again the worker must carry on: the failed transaction was
rolled back, so new runs are accepted and the waiting run finishes.
A statement that fails inside a transaction (here a temporary trigger of the
worker's own connection aborts it) must leave no transaction open either.
At start-up, a journal file replaced by a symbolic link, or a state folder on a
file system with no space left, is refused with the state exit code and a
message naming the journal file (never an unexpected failure); a link's target
is not touched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import grpc
from storage_env import namespace_prefix
from test_storage import _InProcess, _needs_mounts, _worker_noting_storage_waits

from conftest import pb, script

S = pb.runs


def test_a_read_only_journal_refuses_retryably_and_recovers(tmp_path):
    with _worker_noting_storage_waits(tmp_path) as (worker, seen):
        c1, c2 = worker.client("app1"), worker.client("app2")
        run_id = c1.create("slow", script("sleep 1500", "say after the wait")).run.run_id
        db = worker.worker._workspace.journal._db
        worker.sync(lambda: db.execute("PRAGMA query_only = ON"))
        for attempt in range(3):  # every refusal leaves the journal usable for the next
            try:
                c2.create(f"refused{attempt}")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.UNAVAILABLE, err.details()
                assert "cannot write its journal" in err.details()
            else:
                raise AssertionError("a run was accepted by a journal that takes no writes")
        assert seen.event.wait(30), "the run never tried to record its output"
        assert c1.get(run_id).status == S.RUN_STATUS_RUNNING
        worker.sync(lambda: db.execute("PRAGMA query_only = OFF"))
        final = c1.wait_status(run_id, S.RUN_STATUS_SUCCEEDED, timeout=30)
        assert final.result.output_text == "after the wait"
        # Nothing of the refused creates was kept, and the key is free to use now.
        accepted = c2.create("refused0")
        assert not accepted.replayed
        c2.wait_status(accepted.run.run_id, S.RUN_STATUS_SUCCEEDED, timeout=30)


def test_a_write_that_fails_inside_a_transaction_is_rolled_back(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    worker = _InProcess(state)
    try:
        c1 = worker.client("app1")
        db = worker.worker._workspace.journal._db
        worker.sync(lambda: db.execute(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON records "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"))
        try:
            c1.create("refused")
        except grpc.RpcError as err:
            assert err.code() != grpc.StatusCode.OK
        else:
            raise AssertionError("a run was accepted although its records were refused")
        assert not worker.sync(lambda: db.in_transaction)
        worker.sync(lambda: db.execute("DROP TRIGGER refuse"))
        accepted = c1.create("refused")
        assert not accepted.replayed
        c1.wait_status(accepted.run.run_id, S.RUN_STATUS_SUCCEEDED, timeout=30)
    finally:
        worker.stop()


def test_a_symlinked_journal_file_is_refused_at_start(make_worker):
    worker = make_worker()
    worker.stop()
    journal = worker.state / "journal.sqlite3"
    victim = worker.root / "victim.sqlite3"
    journal.rename(victim)
    for side in ("-wal", "-shm"):
        (worker.state / f"journal.sqlite3{side}").unlink(missing_ok=True)
    journal.symlink_to(victim)
    before = victim.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "colossus_reference_worker.cli",
                           "--public-api-dir", str(worker.public)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 4, proc.stderr  # the state folder cannot be used
    assert str(journal) in proc.stderr and "unexpected" not in proc.stderr
    assert victim.read_bytes() == before


def test_a_full_disk_at_start_up_exits_with_the_state_code(make_worker):
    _needs_mounts()
    worker = make_worker(start=False)
    seed = worker.root / "seed"
    shutil.copytree(worker.state, seed, symlinks=True)
    prefix, _ = namespace_prefix()
    assert prefix is not None
    # A fresh 1 MiB tmpfs over the state folder, holding the worker's files and then
    # one more file that takes every byte left.
    mount = ('mount -t tmpfs -o "size=1m,mode=0700" tmpfs "$1" && cp -a "$2"/. "$1"/ '
             '&& { head -c 4000000 /dev/zero > "$1/filler" 2>/dev/null; true; } '
             '&& shift 2 && exec "$@"')
    proc = subprocess.run(
        [*prefix, "sh", "-c", mount, "sh", str(worker.state), str(seed), sys.executable, "-m",
         "colossus_reference_worker.cli", "--public-api-dir", str(worker.public)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 4, proc.stderr
    assert str(worker.state / "journal.sqlite3") in proc.stderr
    assert "unexpected" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (worker.public / "endpoint.json").exists()
