"""Runs every example program, so the documentation cannot rot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "integration"))
from worker import ReferenceWorker, find_worker

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXECUTABLE = find_worker()
pytestmark = pytest.mark.skipif(
    EXECUTABLE is None,
    reason="reference worker not found: pip install ./conformance or set COLOSSUS_REFERENCE_WORKER",
)


def _run(name: str, *args: str, stdin: str | None = None) -> str:
    env = dict(os.environ, COLOSSUS_REFERENCE_WORKER=EXECUTABLE or "")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_quickstart_sidecar() -> None:
    out = _run("quickstart_sidecar.py", "Say hello")
    assert "Say hello" in out and "finished: SUCCEEDED" in out


def test_watch_resume() -> None:
    assert "second reader resumed after 4: [5," in _run("watch_resume.py")


def test_errors() -> None:
    out = _run("errors.py")
    assert "reason=RUN_NOT_FOUND" in out and "reason=IDEMPOTENCY_CONFLICT" in out
    assert "reason=MAX_TURNS_OUT_OF_RANGE" in out
    # Past the per-application burst the creates wait for the refill instead of failing.
    assert "burst of 6 created 6 distinct runs" in out


def test_daemon(tmp_path: Path) -> None:
    assert EXECUTABLE is not None
    worker = ReferenceWorker(EXECUTABLE, tmp_path)
    enrollment = worker.enroll("daemon-example")
    worker.start()
    try:
        out = _run(
            "daemon.py",
            str(worker.api_dir),
            enrollment.instance_id,
            enrollment.certificate_sha256,
            stdin=enrollment.bearer + "\n",
        )
    finally:
        worker.stop()
    assert f"connected to {enrollment.instance_id} (SHARED_DAEMON)" in out
    assert enrollment.bearer not in out
