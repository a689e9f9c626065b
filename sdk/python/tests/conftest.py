"""Shared fixtures: a fake worker on loopback TLS and a daemon-style discovery folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import colossus_agent_client as colossus
from fake_worker import BEARER, INSTANCE_ID, FakeWorker, Leaf, make_leaf

FAST_RETRY = colossus.RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.02)


@pytest.fixture(scope="session")
def leaf() -> Leaf:
    return make_leaf()


@pytest.fixture
def fake(leaf: Leaf) -> Iterator[FakeWorker]:
    worker = FakeWorker(leaf).start()
    yield worker
    worker.stop()


@pytest.fixture
def api_dir(fake: FakeWorker, tmp_path: Path) -> Path:
    return fake.write_discovery(tmp_path / "public-api")


def daemon_options(fake: FakeWorker, api_dir: Path, **kw: object) -> colossus.DaemonOptions:
    values: dict[str, object] = dict(
        public_api_dir=api_dir,
        expected_instance_id=INSTANCE_ID,
        expected_certificate_sha256=fake.leaf.sha256,
        credentials=colossus.InMemoryCredentialProvider(BEARER),
        retry=FAST_RETRY,
        timeout=5.0,
        connect_timeout=5.0,
    )
    values.update(kw)
    return colossus.DaemonOptions(**values)  # type: ignore[arg-type]


@pytest.fixture
def options(fake: FakeWorker, api_dir: Path) -> colossus.DaemonOptions:
    return daemon_options(fake, api_dir)


@pytest.fixture
def client(options: colossus.DaemonOptions) -> Iterator[colossus.Client]:
    with colossus.Client.connect(options) as c:
        yield c
