"""Artifacts: size- and digest-bound uploads, verified downloads (sync and async).

Uploads are never retried. Downloads are reads: an ``UNAVAILABLE`` failure restarts the
download from the beginning under the read policy. Bytes are handed to the caller only
after their length and SHA-256 match the artifact's metadata.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import grpc

from . import _convert
from . import _models as m
from ._connection import DEFAULT, AsyncConnection, SyncConnection, mutation_error
from ._errors import ArtifactIntegrityError, ProtocolViolationError
from ._requests import CAP_ARTIFACTS, check_id, check_manifest, require_capability
from ._retry import ready_async, ready_sync, retry_async, retry_sync
from ._transport._first_status import FirstStatus
from ._watch import AsyncBackend, SyncBackend
from .api.v1alpha1 import artifacts_pb2

_DEFAULT_CHUNK = 64 * 1024
# The most a chunk message adds to its bytes: one tag byte and a length varint of at most five.
CHUNK_FRAMING = 6


def upload_chunk_bytes(limits: m.Limits) -> int:
    """The worker's chunk limit, cut so every chunk message fits the request cap (C7)."""
    chunk = limits.max_artifact_chunk_bytes or _DEFAULT_CHUNK
    cap = limits.max_request_bytes
    return min(chunk, cap - CHUNK_FRAMING) if cap > CHUNK_FRAMING else chunk


def _upload_messages(
    conn: SyncConnection | AsyncConnection,
    data: bytes,
    media_type: str,
    display_name: str | None,
) -> tuple[str, list[artifacts_pb2.UploadArtifactRequest]]:
    digest = hashlib.sha256(data).hexdigest()
    manifest = check_manifest(
        conn.server_info,
        size=len(data),
        sha256=digest,
        media_type=media_type,
        display_name=display_name,
    )
    chunk = upload_chunk_bytes(conn.server_info.limits)
    # The chunks are cut to fit the request cap; the manifest, like every message, is
    # checked against it where requests leave (_request_cap.py).
    messages = [artifacts_pb2.UploadArtifactRequest(manifest=manifest)]
    view = memoryview(data)
    messages.extend(
        artifacts_pb2.UploadArtifactRequest(chunk=bytes(view[i : i + chunk]))
        for i in range(0, len(data), chunk)
    )
    return digest, messages


def _check_uploaded(pb: artifacts_pb2.Artifact, size: int, digest: str) -> m.Artifact:
    artifact = _convert.artifact(pb)
    if artifact.size_bytes != size or artifact.sha256 != digest:
        raise ProtocolViolationError(
            "the worker stored an artifact that differs from the upload",
            reason="ARTIFACT_MISMATCH",
        )
    check_id(artifact.artifact_id, "artifact_id")
    return artifact


class DownloadVerifier:
    """Checks a download stream: metadata first, then chunks, bounded by declared size."""

    def __init__(self, artifact_id: str, max_bytes: int) -> None:
        self._artifact_id = artifact_id
        self._max_bytes = max_bytes
        self._artifact: m.Artifact | None = None
        self._hash = hashlib.sha256()
        self._parts: list[bytes] = []
        self._received = 0

    def feed(self, message: artifacts_pb2.DownloadArtifactResponse) -> None:
        kind = message.WhichOneof("part")
        if self._artifact is None:
            if kind != "artifact":
                raise ProtocolViolationError(
                    "the download did not start with metadata", reason="ARTIFACT_STREAM_ORDER"
                )
            artifact = _convert.artifact(message.artifact)
            if artifact.artifact_id != self._artifact_id:
                raise ProtocolViolationError(
                    "the download described another artifact", reason="ARTIFACT_STREAM_ORDER"
                )
            if self._max_bytes and artifact.size_bytes > self._max_bytes:
                raise ArtifactIntegrityError(
                    "the artifact is larger than the worker's advertised limit",
                    reason="ARTIFACT_TOO_LARGE",
                )
            self._artifact = artifact
            return
        if kind != "chunk":
            raise ProtocolViolationError(
                "the download sent metadata twice", reason="ARTIFACT_STREAM_ORDER"
            )
        self._received += len(message.chunk)
        if self._received > self._artifact.size_bytes:
            raise ArtifactIntegrityError(
                "the download sent more bytes than declared", reason="ARTIFACT_SIZE_MISMATCH"
            )
        self._hash.update(message.chunk)
        self._parts.append(message.chunk)

    def finish(self) -> m.DownloadedArtifact:
        artifact = self._artifact
        if artifact is None:
            raise ProtocolViolationError(
                "the download ended before its metadata", reason="ARTIFACT_STREAM_ORDER"
            )
        if self._received != artifact.size_bytes:
            raise ArtifactIntegrityError(
                "the download ended before all declared bytes", reason="ARTIFACT_SIZE_MISMATCH"
            )
        if not hmac.compare_digest(self._hash.hexdigest(), artifact.sha256):
            raise ArtifactIntegrityError(
                "the downloaded bytes do not match the declared SHA-256",
                reason="ARTIFACT_DIGEST_MISMATCH",
            )
        return m.DownloadedArtifact(artifact=artifact, data=b"".join(self._parts))


class Artifacts:
    """Artifact operations; reach them as ``client.artifacts`` (never constructed directly).

    Both need a worker that advertises the ``artifacts`` capability; without it they raise
    :class:`CapabilityMissingError` before sending anything.
    """

    def __init__(self, backend: SyncBackend) -> None:
        self._backend = backend

    def upload(
        self,
        data: bytes,
        *,
        media_type: str,
        display_name: str | None = None,
        timeout: float | None = DEFAULT,
    ) -> m.Artifact:
        """Uploads ``data`` once (never retried) and checks what the worker stored.

        Pass the returned :class:`Artifact` (or an :class:`ArtifactPart` naming its ID) in
        a run's input.

        Args:
            data: the bytes to store (``bytes``, ``bytearray`` or ``memoryview``).
            media_type: the content type, ``type/subtype`` (for example ``image/png``).
            display_name: an optional file name to show (1-255 bytes, no path separators).
            timeout: seconds for the whole upload; the client's default when omitted.

        Returns:
            The stored :class:`Artifact`, whose size and SHA-256 match ``data``.

        Raises:
            TypeError: ``data`` is a ``str`` or not bytes-like.
            CapabilityMissingError: the worker does not advertise ``artifacts``.
            ResourceExhaustedError: ``data`` is over the worker's artifact size limit.
            InvalidArgumentError: a malformed ``media_type`` or ``display_name``, or the
                worker rejected the upload.
            OutcomeUnknownError: the upload may or may not have been stored.
            ProtocolViolationError: the worker reported a different size or digest.
        """
        conn = self._backend.connection()
        digest, messages = _upload_messages(conn, _as_bytes(data), media_type, display_name)
        refused_before = conn.trust_refusal()
        try:
            response = conn.artifacts.UploadArtifact(
                iter(messages), timeout=conn.timeout(timeout), metadata=conn.metadata()
            )
        except grpc.RpcError as exc:
            raise mutation_error(exc, conn, refused_before, None) from None
        return _check_uploaded(response.artifact, len(data), digest)

    def download(
        self, artifact_id: str, *, timeout: float | None = DEFAULT
    ) -> m.DownloadedArtifact:
        """Downloads one artifact and verifies it before returning any byte.

        A download interrupted by a briefly unavailable worker starts again from the
        beginning, under the client's retry policy.

        Args:
            artifact_id: the artifact's ID (``Artifact.artifact_id``).
            timeout: seconds for each attempt; the client's default when omitted.

        Returns:
            A :class:`DownloadedArtifact`: the metadata and the verified bytes.

        Raises:
            InvalidArgumentError: ``artifact_id`` is malformed.
            CapabilityMissingError: the worker does not advertise ``artifacts``.
            NotFoundError: no such artifact is visible to this application.
            ArtifactIntegrityError: the bytes do not match the declared size or SHA-256.
            ProtocolViolationError: the stream was out of order or described another
                artifact.
            TransportError: the worker stayed unreachable beyond the retry policy.
        """
        check_id(artifact_id, "artifact_id")

        def attempt() -> m.DownloadedArtifact:
            conn = self._backend.connection()
            require_capability(conn.server_info, CAP_ARTIFACTS, "an artifact download")
            request = artifacts_pb2.DownloadArtifactRequest(artifact_id=artifact_id)
            verifier = DownloadVerifier(artifact_id, conn.server_info.limits.max_artifact_bytes)
            stream: Any = conn.artifacts.DownloadArtifact(
                request,
                timeout=conn.timeout(timeout),
                metadata=conn.metadata(),
            )
            try:
                for message in stream:
                    verifier.feed(message)
            finally:
                stream.cancel()
            return verifier.finish()

        return retry_sync(
            attempt,
            self._backend.connection().options.retry,
            what="DownloadArtifact",
            ready=ready_sync(self._backend),
        )


def _as_bytes(data: object) -> bytes:
    if isinstance(data, str):
        raise TypeError("data must be bytes, not str: encode text first, e.g. text.encode()")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes-like, not {type(data).__name__}")
    return bytes(data)


class AsyncArtifacts:
    """The async twin of :class:`Artifacts`; reach it as ``client.artifacts`` of an
    :class:`AsyncClient`. Same methods, arguments, results and errors, awaited."""

    def __init__(self, backend: AsyncBackend) -> None:
        self._backend = backend

    async def upload(
        self,
        data: bytes,
        *,
        media_type: str,
        display_name: str | None = None,
        timeout: float | None = DEFAULT,
    ) -> m.Artifact:
        """See :meth:`Artifacts.upload`."""
        conn = await self._backend.connection()
        digest, messages = _upload_messages(conn, _as_bytes(data), media_type, display_name)
        refused_before = conn.trust_refusal()
        call = conn.artifacts.UploadArtifact(
            iter(messages), timeout=conn.timeout(timeout), metadata=conn.metadata()
        )
        # A refusal while chunks are still being written reaches the caller as the
        # worker's answer, not as grpc.aio's INTERNAL (see _first_status).
        first = FirstStatus(call)
        try:
            response = await call
        except grpc.RpcError as exc:
            raise mutation_error(first.original(exc), conn, refused_before, None) from None
        return _check_uploaded(response.artifact, len(data), digest)

    async def download(
        self, artifact_id: str, *, timeout: float | None = DEFAULT
    ) -> m.DownloadedArtifact:
        """See :meth:`Artifacts.download`."""
        check_id(artifact_id, "artifact_id")

        async def attempt() -> m.DownloadedArtifact:
            conn = await self._backend.connection()
            require_capability(conn.server_info, CAP_ARTIFACTS, "an artifact download")
            request = artifacts_pb2.DownloadArtifactRequest(artifact_id=artifact_id)
            verifier = DownloadVerifier(artifact_id, conn.server_info.limits.max_artifact_bytes)
            call: Any = conn.artifacts.DownloadArtifact(
                request,
                timeout=conn.timeout(timeout),
                metadata=conn.metadata(),
            )
            try:
                async for message in call:
                    verifier.feed(message)
            finally:
                call.cancel()
            return verifier.finish()

        conn = await self._backend.connection()
        return await retry_async(
            attempt, conn.options.retry, what="DownloadArtifact", ready=ready_async(self._backend)
        )
