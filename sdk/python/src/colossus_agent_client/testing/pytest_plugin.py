"""pytest fixtures for applications that use the Colossus SDK.

Enable in ``conftest.py`` with ``pytest_plugins = ["colossus_agent_client.testing.pytest_plugin"]``.

``colossus_fake_worker``
    A started :class:`~colossus_agent_client.testing.FakeWorker`; connect with
    ``colossus_agent_client.Client.connect(colossus_fake_worker.daemon_options())``.
``colossus_reference_worker``
    A :class:`~colossus_agent_client.Client` connected to the real reference worker, started as a
    private sidecar for the test and stopped after it. The executable is
    ``$COLOSSUS_REFERENCE_WORKER`` or ``colossus-reference-worker`` on ``PATH``
    (``pip install ./conformance`` in a checkout of colossus-sdks); without it the fixture
    fails with an explanation rather than skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from .._client import Client
from .._options import SidecarOptions
from ._fake_worker import FakeWorker

ALL_SCOPES = (
    "runs:execute",
    "runs:read",
    "runs:control",
    "prompts:respond",
    "approvals:respond",
    "artifacts:read",
    "artifacts:write",
)


@pytest.fixture
def colossus_fake_worker() -> Iterator[FakeWorker]:
    """A started fake worker, stopped after the test."""
    with FakeWorker() as worker:
        yield worker


@pytest.fixture
def colossus_reference_worker() -> Iterator[Client]:
    """A client of a private reference worker (sidecar placement), closed after the test."""
    executable = os.environ.get("COLOSSUS_REFERENCE_WORKER") or shutil.which(
        "colossus-reference-worker"
    )
    if not executable:
        pytest.fail(
            "colossus_reference_worker needs the reference worker: install it "
            "(colossus-reference-worker) or set COLOSSUS_REFERENCE_WORKER to its path"
        )
    options = SidecarOptions(
        executable=executable, application_id="pytest", scopes=ALL_SCOPES, roles=("default",)
    )
    with Client.start_sidecar(options) as client:
        yield client
