"""Fixtures: workers in private temporary folders, enrolled applications."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# This folder is a package (so its conftest never clashes with tests/worker's); its
# helper modules are imported by plain name, so put the folder itself on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from worker_harness import FaultControl, Worker, enroll, private_dir


@dataclass
class FaultyWorker:
    worker: Worker
    bearer: str
    other_bearer: str
    control: FaultControl
    socket_path: Path


@pytest.fixture(scope="module")
def short_tmp() -> Iterator[Path]:
    # Unix socket paths are limited to about 100 bytes: keep them short.
    path = Path(tempfile.mkdtemp(prefix="cdur-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def faulty(short_tmp: Path) -> Iterator[FaultyWorker]:
    """One worker with fault injection on, and two enrolled applications."""
    pub = private_dir(short_tmp / "pub")
    bearer = enroll(pub, "app1")
    other = enroll(pub, "app2")
    sock = short_tmp / "fc.sock"
    worker = Worker.start(pub, "--fault-control-socket", str(sock))
    control = FaultControl(sock)
    try:
        yield FaultyWorker(worker, bearer, other, control, sock)
    finally:
        control.close()
        worker.terminate()
