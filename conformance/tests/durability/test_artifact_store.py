"""Unit tests of content-addressed artifact storage."""

from __future__ import annotations

import hashlib
import os

import pytest

from colossus_reference_worker.artifacts.store import (
    ArtifactStore,
    IntegrityError,
    ManifestError,
    TooLargeError,
    check_manifest,
)


@pytest.fixture
def store(tmp_path):
    s = ArtifactStore(tmp_path, max_artifact_bytes=1000)
    yield s
    s.close()


def manifest(data, **kw):
    args = {"media_type": "text/plain", "size_bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "display_name": "a.txt"}
    args.update(kw)
    return check_manifest(**args, max_bytes=1000)


def stored_files(store):
    return sorted(p for p in store.root.rglob("*") if p.is_file() and p.suffix != ".sqlite3"
                  and "index.sqlite3" not in p.name)


def test_round_trip_and_owner_scope(store):
    data = b"hello artifact" * 10
    up = store.begin_upload("app1", manifest(data))
    up.write(data[:50])
    up.write(data[50:])
    meta = up.commit()
    assert store.lookup("app1", meta.artifact_id) == meta
    assert store.lookup("app2", meta.artifact_id) is None
    with store.open_blob(meta) as f:
        assert f.read() == data
    blob = store.blob_path(meta.sha256)
    assert oct(os.stat(blob).st_mode & 0o777) == "0o600"
    assert list(store.tmp_dir.iterdir()) == []


def test_digest_mismatch_stores_nothing(store):
    data = b"x" * 100
    up = store.begin_upload("app1", manifest(data, sha256="0" * 64))
    up.write(data)
    with pytest.raises(IntegrityError):
        up.commit()
    assert stored_files(store) == []


def test_size_overrun_is_refused_immediately(store):
    up = store.begin_upload("app1", manifest(b"abc"))
    with pytest.raises(IntegrityError):
        up.write(b"abcd")
    assert stored_files(store) == []


def test_short_upload_is_refused(store):
    up = store.begin_upload("app1", manifest(b"abcdef"))
    up.write(b"abc")
    with pytest.raises(IntegrityError):
        up.commit()
    assert stored_files(store) == []


def test_manifest_rules():
    with pytest.raises(TooLargeError):
        manifest(b"", size_bytes=1001)
    for kw in ({"media_type": "text"}, {"media_type": "a" * 130 + "/b"},
               {"sha256": "A" * 64}, {"display_name": "../etc"}, {"display_name": "x" * 256}):
        with pytest.raises(ManifestError):
            manifest(b"", **kw)


def test_same_bytes_two_owners_share_a_blob(store):
    data = b"shared"
    a = store.begin_upload("a", manifest(data))
    a.write(data)
    ma = a.commit()
    b = store.begin_upload("b", manifest(data))
    b.write(data)
    mb = b.commit()
    assert ma.artifact_id != mb.artifact_id
    assert len(stored_files(store)) == 1
    assert store.lookup("a", mb.artifact_id) is None


@pytest.mark.parametrize("name", ["index.sqlite3", "blobs", "tmp"])
def test_a_link_in_the_artifact_folder_is_refused_and_its_target_untouched(tmp_path, name):
    # Like the journal, the artifact index and folders are never reached through a
    # link. The index used to be opened by SQLite (which follows links) and chmod'ed,
    # so a link there changed another file's mode and could have SQLite write into it.
    from colossus_reference_worker.state import StateError

    state = tmp_path / "state"
    (state / "artifacts").mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim"
    if name == "index.sqlite3":
        victim.write_bytes(b"")  # an empty file: SQLite would happily make it a database
        victim.chmod(0o644)
    else:
        victim.mkdir(mode=0o755)
    (state / "artifacts" / name).symlink_to(victim)
    before = (os.stat(victim).st_mode, victim.read_bytes() if victim.is_file() else None)
    with pytest.raises(StateError, match=r"symbolic link|links"):
        ArtifactStore(state, max_artifact_bytes=1000)
    after = (os.stat(victim).st_mode, victim.read_bytes() if victim.is_file() else None)
    assert after == before
    if victim.is_dir():
        assert list(victim.iterdir()) == []
