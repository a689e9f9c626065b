"""C7 holds for every call, not only for the two that carry caller text.

A worker may advertise a request cap smaller than a read, a watch, a listing, a cancel or a
download request, or than an upload's manifest; the SDK must refuse each locally
(``REQUEST_TOO_LARGE``) instead of sending it and leaving the cap to the worker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import colossus_agent_client as colossus
from conftest import daemon_options
from fake_worker import FakeWorker

# A well-formed ID whose request encodes to 66 bytes, over the advertised 48.
LONG_ID = "run_" + "a" * 60
CAP = 48


def _watch(client: colossus.Client) -> None:
    with client.runs.watch(LONG_ID) as watch:
        next(iter(watch))


SYNC_CALLS: dict[str, Callable[[colossus.Client], object]] = {
    "GetRun": lambda c: c.runs.get(LONG_ID),
    "CancelRun": lambda c: c.runs.cancel(LONG_ID),
    "ListRuns": lambda c: list(c.runs.list(page_token="t" * 60)),
    "WatchRun": _watch,
    "DownloadArtifact": lambda c: c.artifacts.download("art_" + "a" * 60),
    # The manifest alone (a 64-digit SHA-256) is over the cap; the chunks would fit.
    "UploadArtifact": lambda c: c.artifacts.upload(b"0123456789", media_type="text/plain"),
}


@pytest.mark.parametrize("method", sorted(SYNC_CALLS))
def test_a_call_over_the_advertised_cap_never_leaves_the_client(
    fake: FakeWorker, api_dir: Path, method: str
) -> None:
    fake.b.limits["max_request_bytes"] = CAP
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            SYNC_CALLS[method](client)
    assert caught.value.reason == "REQUEST_TOO_LARGE"
    assert caught.value.code is None
    assert fake.methods() == ["GetServerInfo"]


async def _async_watch(client: colossus.AsyncClient) -> None:
    async with client.runs.watch(LONG_ID) as watch:
        async for _ in watch:
            break


async def _async_list(client: colossus.AsyncClient) -> None:
    async for _ in client.runs.list(page_token="t" * 60):
        break


ASYNC_CALLS: dict[str, Callable[[colossus.AsyncClient], Awaitable[Any]]] = {
    "GetRun": lambda c: c.runs.get(LONG_ID),
    "CancelRun": lambda c: c.runs.cancel(LONG_ID),
    "ListRuns": _async_list,
    "WatchRun": _async_watch,
    "DownloadArtifact": lambda c: c.artifacts.download("art_" + "a" * 60),
    "UploadArtifact": lambda c: c.artifacts.upload(b"0123456789", media_type="text/plain"),
}


@pytest.mark.parametrize("method", sorted(ASYNC_CALLS))
async def test_an_async_call_over_the_advertised_cap_never_leaves_the_client(
    fake: FakeWorker, api_dir: Path, method: str
) -> None:
    fake.b.limits["max_request_bytes"] = CAP
    async with await colossus.AsyncClient.connect(daemon_options(fake, api_dir)) as client:
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            await ASYNC_CALLS[method](client)
    assert caught.value.reason == "REQUEST_TOO_LARGE"
    assert fake.methods() == ["GetServerInfo"]


def test_a_read_that_fits_the_cap_is_still_sent(fake: FakeWorker, api_dir: Path) -> None:
    fake.b.limits["max_request_bytes"] = CAP
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        with pytest.raises(colossus.NotFoundError):
            client.runs.get("run_short")
    assert fake.methods() == ["GetServerInfo", "GetRun"]


def test_a_create_over_the_cap_is_refused_locally_with_its_key(
    fake: FakeWorker, api_dir: Path
) -> None:
    fake.b.limits["max_request_bytes"] = CAP
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            client.runs.create("x" * CAP, idempotency_key="key-over-the-cap")
    assert caught.value.reason == "REQUEST_TOO_LARGE"
    assert caught.value.idempotency_key == "key-over-the-cap"
    assert fake.methods() == ["GetServerInfo"]


async def test_an_async_create_over_the_cap_is_refused_locally_with_its_key(
    fake: FakeWorker, api_dir: Path
) -> None:
    fake.b.limits["max_request_bytes"] = CAP
    async with await colossus.AsyncClient.connect(daemon_options(fake, api_dir)) as client:
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            await client.runs.create("x" * CAP, idempotency_key="key-over-the-cap")
    assert caught.value.reason == "REQUEST_TOO_LARGE"
    assert caught.value.idempotency_key == "key-over-the-cap"
    assert fake.methods() == ["GetServerInfo"]
