"""Artifact uploads at their bounds: size, display names, leftovers and aborted streams.

Unit tests of the store and of the service's upload loop (fed an in-memory stream),
so each bound is tried exactly, with nothing timed.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import os
import types
from collections.abc import AsyncIterator

import pytest

from colossus_reference_worker._gen.colossus.api.v1alpha1 import (
    ArtifactManifest,
    DownloadArtifactRequest,
    UploadArtifactRequest,
)
from colossus_reference_worker.artifacts.service import ArtifactService, check_input_artifact
from colossus_reference_worker.artifacts.store import (
    ArtifactMeta,
    ArtifactStore,
    IntegrityError,
    ManifestError,
    TooLargeError,
    check_manifest,
)
from colossus_reference_worker.config import Limits
from colossus_reference_worker.credentials import Grant, Principal
from colossus_reference_worker.errors import ApiError

MAX = 1000


@pytest.fixture
def store(tmp_path):
    s = ArtifactStore(tmp_path, max_artifact_bytes=MAX)
    yield s
    s.close()


def _manifest(size: int, name: str = "a.txt", digest: str = "0" * 64):
    return check_manifest("text/plain", size, digest, name, max_bytes=MAX)


def test_the_size_limit_is_inclusive():
    assert _manifest(MAX).size_bytes == MAX
    with pytest.raises(TooLargeError):
        _manifest(MAX + 1)


@pytest.mark.parametrize("name", ["a\x01b", "tab\there", "del\x7f", "line\nbreak", "nul\x00",
                                  ".", "..", "a/b", "a\\b"])
def test_display_names_that_are_not_plain_names_are_refused(name):
    with pytest.raises(ManifestError) as caught:
        _manifest(1, name=name)
    assert caught.value.field == "manifest.display_name"


def test_uploads_left_over_by_a_crash_are_removed_when_the_store_opens(tmp_path):
    first = ArtifactStore(tmp_path, max_artifact_bytes=MAX)
    leftover = first.tmp_dir / "deadbeef.part"
    leftover.write_bytes(b"half an upload")
    first.close()
    second = ArtifactStore(tmp_path, max_artifact_bytes=MAX)
    try:
        assert list(second.tmp_dir.iterdir()) == []
    finally:
        second.close()


def test_a_blob_of_the_wrong_length_is_never_served(store):
    data = b"twelve bytes"
    digest = hashlib.sha256(data).hexdigest()
    upload = store.begin_upload("app1", _manifest(len(data), digest=digest))
    upload.write(data)
    meta = upload.commit()
    store.blob_path(meta.sha256).write_bytes(data[:-1])
    with pytest.raises(IntegrityError):
        store.open_blob(meta)


async def _no_fault(method: str) -> None:
    del method


def _service(store: ArtifactStore) -> ArtifactService:
    pipeline = types.SimpleNamespace(config=types.SimpleNamespace(limits=Limits()),
                                     hooks=types.SimpleNamespace(before_unary=_no_fault))
    return ArtifactService(pipeline, store)  # type: ignore[arg-type]


CALLER = Principal("app1", "cred_x", Grant(("artifacts:write",), (), ()))


def test_an_upload_that_ends_in_an_error_leaves_no_partial_file(store):
    data = b"x" * 100
    manifest = ArtifactManifest(media_type="text/plain", size_bytes=len(data),
                                sha256=hashlib.sha256(data).hexdigest(), display_name="a.txt")

    async def messages() -> AsyncIterator[UploadArtifactRequest]:
        yield UploadArtifactRequest(manifest=manifest)
        yield UploadArtifactRequest(chunk=data[:40])
        yield UploadArtifactRequest(manifest=manifest)  # a second manifest: refused

    with pytest.raises(ApiError):
        asyncio.run(_service(store).upload(CALLER, messages()))
    assert list(store.tmp_dir.iterdir()) == []
    assert [p for p in store.blob_dir.rglob("*") if p.is_file()] == []


def test_an_image_is_refused_as_run_input_without_the_capability(store, monkeypatch):
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = ArtifactMeta("art_x", "app1", "image/png", 1, "0" * 64, "a.png", now)
    monkeypatch.setattr(store, "lookup", lambda app, artifact_id: meta)
    with pytest.raises(ApiError) as caught:
        check_input_artifact(store, "app1", "art_x", image_input=False)
    assert caught.value.reason == "ARTIFACT_NOT_ACCEPTED"
    assert check_input_artifact(store, "app1", "art_x", image_input=True) is meta


def _stored(store: ArtifactStore, data: bytes) -> ArtifactMeta:
    upload = store.begin_upload("app1", _manifest(len(data),
                                                  digest=hashlib.sha256(data).hexdigest()))
    upload.write(data)
    return upload.commit()


def test_a_download_of_damaged_bytes_fails_with_data_loss(store):
    data = b"the genuine content"
    meta = _stored(store, data)
    store.blob_path(meta.sha256).write_bytes(b"#" * len(data))  # same length, other bytes

    async def download() -> list[object]:
        received = []
        async for reply in _service(store).download(
                CALLER, DownloadArtifactRequest(artifact_id=meta.artifact_id)):
            received.append(reply)
        return received

    with pytest.raises(ApiError) as caught:
        asyncio.run(download())
    assert caught.value.reason == "JOURNAL_INTEGRITY"


def test_a_committed_blob_and_its_folder_are_synced(store, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    meta = _stored(store, b"durable bytes")
    blob = store.blob_path(meta.sha256)
    assert blob.stat().st_ino in synced  # the bytes, before the rename
    assert blob.parent.stat().st_ino in synced  # the rename itself
