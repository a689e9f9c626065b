"""S6: uploads bound to size and digest, downloads verified before bytes are returned."""

from __future__ import annotations

import hashlib

import grpc
import pytest

import colossus_agent_client as colossus
from fake_worker import FakeWorker

DATA = bytes(range(256)) * 200  # 51,200 bytes: several chunks each way


def test_upload_then_download_round_trip(fake: FakeWorker, client: colossus.Client) -> None:
    art = client.artifacts.upload(
        DATA, media_type="application/octet-stream", display_name="blob.bin"
    )
    assert art.size_bytes == len(DATA) and art.sha256 == hashlib.sha256(DATA).hexdigest()
    manifest = next(c[1] for c in fake.calls if c[0] == "UploadArtifact").manifest
    assert manifest.size_bytes == len(DATA)
    got = client.artifacts.download(art.artifact_id)
    assert got.data == DATA and got.artifact == art
    assert "data" not in repr(got) or repr(DATA[:10]) not in repr(got)


@pytest.mark.parametrize("tamper", ["digest", "long", "short"])
def test_download_refuses_tampered_bytes(
    fake: FakeWorker, client: colossus.Client, tamper: str
) -> None:
    art = client.artifacts.upload(DATA, media_type="application/octet-stream")
    fake.b.tamper_download = tamper
    with pytest.raises(colossus.ArtifactIntegrityError):
        client.artifacts.download(art.artifact_id)


def test_upload_is_never_retried(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.fail["UploadArtifact"] = [(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")]
    with pytest.raises(colossus.OutcomeUnknownError):
        client.artifacts.upload(DATA, media_type="text/plain")
    assert fake.methods().count("UploadArtifact") == 1


def test_upload_local_limits(fake: FakeWorker, client: colossus.Client) -> None:
    with pytest.raises(colossus.ResourceExhaustedError):
        client.artifacts.upload(b"x" * (1024 * 1024 + 1), media_type="text/plain")
    with pytest.raises(colossus.InvalidArgumentError):
        client.artifacts.upload(b"x", media_type="not a type")
    with pytest.raises(colossus.InvalidArgumentError):
        client.artifacts.upload(b"x", media_type="text/plain", display_name="../evil")
    assert "UploadArtifact" not in fake.methods()


def test_download_retries_unavailable(fake: FakeWorker, client: colossus.Client) -> None:
    art = client.artifacts.upload(DATA, media_type="text/plain")
    fake.b.fail["DownloadArtifact"] = [(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")]
    assert client.artifacts.download(art.artifact_id).data == DATA
    assert fake.methods().count("DownloadArtifact") == 2


async def test_async_artifacts(fake: FakeWorker, options: colossus.DaemonOptions) -> None:
    async with await colossus.AsyncClient.connect(options) as client:
        art = await client.artifacts.upload(DATA, media_type="image/png")
        assert (await client.artifacts.download(art.artifact_id)).data == DATA
        fake.b.tamper_download = "digest"
        with pytest.raises(colossus.ArtifactIntegrityError):
            await client.artifacts.download(art.artifact_id)
