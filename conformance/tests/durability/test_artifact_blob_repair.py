"""A damaged blob is healed by the next verified upload of the same bytes.

Blobs are shared by content address, so a blob damaged on disk (same length,
other bytes) would otherwise keep failing every download of that content, even
after the owner uploads the genuine bytes again and is told it succeeded.
"""

from __future__ import annotations

import hashlib

import pytest

from colossus_reference_worker.artifacts.store import ArtifactStore, check_manifest


@pytest.fixture
def store(tmp_path):
    s = ArtifactStore(tmp_path, max_artifact_bytes=1000)
    yield s
    s.close()


def _upload(store: ArtifactStore, app: str, data: bytes):
    manifest = check_manifest("text/plain", len(data), hashlib.sha256(data).hexdigest(),
                              "a.txt", max_bytes=1000)
    upload = store.begin_upload(app, manifest)
    upload.write(data)
    return upload.commit()


def _read(store: ArtifactStore, meta) -> bytes:
    with store.open_blob(meta) as blob:
        return blob.read()


def test_a_damaged_blob_is_replaced_by_the_next_verified_upload(store):
    data = b"genuine bytes " * 20
    first = _upload(store, "app1", data)
    blob = store.blob_path(first.sha256)
    blob.write_bytes(b"?" * len(data))  # bit rot: the length still matches
    assert hashlib.sha256(_read(store, first)).hexdigest() != first.sha256
    again = _upload(store, "app1", data)
    assert _read(store, again) == data
    assert _read(store, first) == data  # every artifact of that content is whole again
    assert oct(blob.stat().st_mode & 0o777) == "0o600"
    assert list(store.tmp_dir.iterdir()) == []


def test_an_intact_blob_keeps_its_bytes_when_uploaded_again(store):
    data = b"same content"
    first = _upload(store, "app1", data)
    second = _upload(store, "app2", data)
    assert _read(store, first) == _read(store, second) == data
    assert len([p for p in store.blob_dir.rglob("*") if p.is_file()]) == 1
