"""C7: a response over the accepted response cap is refused locally as RESPONSE_TOO_LARGE.

Reads, watches and downloads alike, in both clients: kind resource exhausted, no status
code (the refusal is the client's own, as REQUEST_TOO_LARGE is), the same reason as every
other SDK, and no byte of the oversized message returned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import colossus_agent_client as colossus
from conftest import daemon_options
from fake_worker import FakeWorker, make_run, output_event

CAP = 600  # the advertised response cap; the fake worker's chunks are 1,000 bytes
RUN = "run_big"


@pytest.fixture
def oversized(fake: FakeWorker) -> FakeWorker:
    """A worker that advertises CAP and has one message of each kind above it."""
    fake.b.limits["max_response_bytes"] = CAP
    fake.b.runs[RUN] = make_run(RUN)
    fake.b.runs[RUN].role = "r" * 2 * CAP
    fake.b.watch_scripts = [[("event", output_event(RUN, 1, text="y" * 2 * CAP))]]
    return fake


def _refused(error: BaseException) -> None:
    assert type(error) is colossus.ResourceExhaustedError
    assert isinstance(error, colossus.ColossusError)
    assert (error.code, error.reason) == (None, "RESPONSE_TOO_LARGE")
    assert "response cap" in error.message


SYNC_CALLS: dict[str, Any] = {
    "get": lambda client, artifact: client.runs.get(RUN),
    "watch": lambda client, artifact: list(client.runs.watch(RUN)),
    "download": lambda client, artifact: client.artifacts.download(artifact),
}


@pytest.mark.parametrize("call", sorted(SYNC_CALLS))
def test_sync_reads_refuse_a_response_over_the_cap(
    oversized: FakeWorker, api_dir: Path, call: str
) -> None:
    with colossus.Client.connect(daemon_options(oversized, api_dir)) as client:
        artifact = client.artifacts.upload(b"z" * 3 * CAP, media_type="text/plain").artifact_id
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            SYNC_CALLS[call](client, artifact)
    _refused(caught.value)


async def _async_watch(client: colossus.AsyncClient, artifact: str) -> Any:
    return [event async for event in client.runs.watch(RUN)]


ASYNC_CALLS: dict[str, Any] = {
    "get": lambda client, artifact: client.runs.get(RUN),
    "watch": _async_watch,
    "download": lambda client, artifact: client.artifacts.download(artifact),
}


@pytest.mark.parametrize("call", sorted(ASYNC_CALLS))
async def test_async_reads_refuse_a_response_over_the_cap(
    oversized: FakeWorker, api_dir: Path, call: str
) -> None:
    async with colossus.AsyncClient.connect(daemon_options(oversized, api_dir)) as client:
        uploaded = await client.artifacts.upload(b"z" * 3 * CAP, media_type="text/plain")
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            await ASYNC_CALLS[call](client, uploaded.artifact_id)
    _refused(caught.value)
