"""ArtifactService end to end: upload, download, integrity, ownership, run input."""

from __future__ import annotations

import hashlib

import grpc
import pytest
from worker_harness import (
    Worker,
    artifacts_pb2,
    enroll,
    error_reason,
    private_dir,
    run_service_pb2,
    runs_pb2,
)

CHUNK = 256 * 1024


@pytest.fixture(scope="module")
def env(short_tmp):
    pub = private_dir(short_tmp / "pub-artifacts")
    owner = enroll(pub, "owner")
    other = enroll(pub, "other")
    reader = enroll(pub, "reader", scopes=("artifacts:read", "runs:read"))
    worker = Worker.start(pub, "--limit", "max_artifact_bytes=2000000")
    try:
        yield worker, owner, other, reader
    finally:
        worker.terminate()


def upload_requests(data: bytes, media_type="application/octet-stream", size=None,
                    sha=None, chunk=CHUNK, name="blob.bin"):
    yield artifacts_pb2.UploadArtifactRequest(manifest=artifacts_pb2.ArtifactManifest(
        media_type=media_type, size_bytes=len(data) if size is None else size,
        sha256=sha or hashlib.sha256(data).hexdigest(), display_name=name))
    for i in range(0, len(data), chunk):
        yield artifacts_pb2.UploadArtifactRequest(chunk=data[i:i + chunk])


def upload(client, data, **kw):
    return client.artifacts.UploadArtifact(upload_requests(data, **kw),
                                           metadata=client.metadata, timeout=30).artifact


def download(client, artifact_id):
    stream = client.artifacts.DownloadArtifact(
        artifacts_pb2.DownloadArtifactRequest(artifact_id=artifact_id),
        metadata=client.metadata, timeout=30)
    parts = list(stream)
    assert parts[0].WhichOneof("part") == "artifact"
    assert all(p.WhichOneof("part") == "chunk" for p in parts[1:])
    return parts[0].artifact, b"".join(p.chunk for p in parts[1:]), parts


def blob_count(worker):
    return sum(1 for p in (worker.public_dir / "state/artifacts/blobs").rglob("*") if p.is_file())


def rejected(client, data, **kw):
    with pytest.raises(grpc.RpcError) as info:
        upload(client, data, **kw)
    return error_reason(info.value)


def test_capability_and_limits_advertised(env):
    worker, owner, *_ = env
    with worker.client(owner) as c:
        info = c.server_info()
    assert "artifacts" in info.capabilities
    assert info.limits.max_artifact_bytes == 2_000_000
    assert info.limits.max_artifact_chunk_bytes == CHUNK


def test_round_trip_verifies(env):
    worker, owner, *_ = env
    data = bytes(range(256)) * 3000  # 768,000 bytes: several chunks
    with worker.client(owner) as c:
        meta = upload(c, data, name="pattern.bin")
        assert meta.size_bytes == len(data) and meta.sha256 == hashlib.sha256(data).hexdigest()
        assert meta.display_name == "pattern.bin" and meta.artifact_id
        got_meta, got, parts = download(c, meta.artifact_id)
    assert got_meta == meta
    assert got == data and len(parts) == 1 + 3
    assert max(len(p.chunk) for p in parts[1:]) <= CHUNK


def test_empty_artifact(env):
    worker, owner, *_ = env
    with worker.client(owner) as c:
        meta = upload(c, b"", media_type="text/plain")
        got_meta, got, parts = download(c, meta.artifact_id)
    assert got == b"" and len(parts) == 1 and got_meta.size_bytes == 0


def test_digest_and_size_mismatch_store_nothing(env):
    worker, owner, *_ = env
    data = b"integrity matters" * 100
    with worker.client(owner) as c:
        before = blob_count(worker)
        assert rejected(c, data, sha="0" * 64) == (
            grpc.StatusCode.INVALID_ARGUMENT, "ARTIFACT_INTEGRITY_MISMATCH")
        assert rejected(c, data, size=len(data) + 1) == (
            grpc.StatusCode.INVALID_ARGUMENT, "ARTIFACT_INTEGRITY_MISMATCH")
        assert rejected(c, data, size=len(data) - 1) == (
            grpc.StatusCode.INVALID_ARGUMENT, "ARTIFACT_INTEGRITY_MISMATCH")
        assert blob_count(worker) == before
    assert list((worker.public_dir / "state/artifacts/tmp").iterdir()) == []


def test_too_large_and_manifest_rules(env):
    worker, owner, *_ = env
    with worker.client(owner) as c:
        assert rejected(c, b"x", size=2_000_001) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED, "ARTIFACT_TOO_LARGE")
        assert rejected(c, b"x", media_type="not a type") == (
            grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")
        assert rejected(c, b"x", name="../escape") == (
            grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")
        # Chunks above the advertised cap are refused.
        assert rejected(c, b"y" * (CHUNK + 1), chunk=CHUNK + 1) == (
            grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")
        # Chunk first, or a second manifest.
        def chunk_first():
            yield artifacts_pb2.UploadArtifactRequest(chunk=b"abc")
        with pytest.raises(grpc.RpcError) as info:
            c.artifacts.UploadArtifact(chunk_first(), metadata=c.metadata, timeout=10)
        assert error_reason(info.value) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")

        def two_manifests():
            first = next(upload_requests(b"abc"))
            yield first
            yield first
        with pytest.raises(grpc.RpcError) as info:
            c.artifacts.UploadArtifact(two_manifests(), metadata=c.metadata, timeout=10)
        assert error_reason(info.value) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")


def test_owner_scoped_and_scopes(env):
    worker, owner, other, reader = env
    with worker.client(owner) as c:
        meta = upload(c, b"secret bytes")
    with worker.client(other) as c:
        with pytest.raises(grpc.RpcError) as info:
            download(c, meta.artifact_id)
        assert error_reason(info.value) == (grpc.StatusCode.NOT_FOUND, "ARTIFACT_NOT_FOUND")
    with worker.client(reader) as c:
        assert rejected(c, b"nope") == (grpc.StatusCode.PERMISSION_DENIED, "SCOPE_MISSING")
        with pytest.raises(grpc.RpcError) as info:
            download(c, meta.artifact_id)  # reader is another application too
        assert error_reason(info.value)[1] == "ARTIFACT_NOT_FOUND"


def test_run_input_references_by_id(env):
    worker, owner, other, _ = env
    with worker.client(owner) as c:
        text = upload(c, b"notes for the run", media_type="text/plain")
        image = upload(c, b"\x89PNG fake", media_type="image/png")

        def create(key, artifact_id):
            req = run_service_pb2.CreateRunRequest(idempotency_key=key, input=[
                runs_pb2.InputPart(text="summarise"),
                runs_pb2.InputPart(artifact=runs_pb2.ArtifactReference(artifact_id=artifact_id)),
            ])
            return c.runs.CreateRun(req, metadata=c.metadata, timeout=10)

        assert create("art-text", text.artifact_id).run.run_id
        with pytest.raises(grpc.RpcError) as info:
            create("art-image", image.artifact_id)
        assert error_reason(info.value) == (grpc.StatusCode.INVALID_ARGUMENT,
                                            "ARTIFACT_NOT_ACCEPTED")
        with pytest.raises(grpc.RpcError) as info:
            create("art-missing", "art_doesnotexist")
        assert error_reason(info.value)[1] == "ARTIFACT_NOT_FOUND"
    with worker.client(other) as c2:
        req = run_service_pb2.CreateRunRequest(idempotency_key="art-foreign", input=[
            runs_pb2.InputPart(artifact=runs_pb2.ArtifactReference(artifact_id=text.artifact_id))])
        with pytest.raises(grpc.RpcError) as info:
            c2.runs.CreateRun(req, metadata=c2.metadata, timeout=10)
        assert error_reason(info.value)[1] == "ARTIFACT_NOT_FOUND"


def test_artifacts_survive_restart(env):
    worker, owner, *_ = env
    with worker.client(owner) as c:
        meta = upload(c, b"durable artifact")
    worker.terminate()
    again = Worker.start(worker.public_dir, "--limit", "max_artifact_bytes=2000000")
    try:
        with again.client(owner) as c:
            _, data, _ = download(c, meta.artifact_id)
        assert data == b"durable artifact"
    finally:
        # Hand the fixture's teardown a live worker again.
        worker.proc = again.proc
        worker.endpoint = again.endpoint
