"""``ArtifactService``: caller-owned chunked upload and download.

Calls go through the shared request pipeline (hooks, authentication, the
``artifacts:write`` / ``artifacts:read`` scope check, bounded message reads)
exactly like the RunService handlers. Every artifact is visible only to
the application that uploaded it: another application's ID is answered
exactly like an unknown one, with ``ARTIFACT_NOT_FOUND``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import betterproto2
import grpclib.const
from grpclib.const import Status
from grpclib.server import Stream

from .._gen.colossus.api.v1alpha1 import (
    Artifact,
    DownloadArtifactRequest,
    DownloadArtifactResponse,
    UploadArtifactRequest,
    UploadArtifactResponse,
)
from ..config import IMAGE_INPUT_CAPABILITY
from ..credentials import Principal
from ..errors import ApiError, invalid
from ..wire.codec import read_messages, read_request
from .store import (
    ArtifactMeta,
    ArtifactStore,
    IntegrityError,
    ManifestError,
    TooLargeError,
    check_manifest,
)


def to_proto(meta: ArtifactMeta) -> Artifact:
    """The public view of a stored artifact (no owner, no storage detail)."""
    return Artifact(
        artifact_id=meta.artifact_id,
        media_type=meta.media_type,
        size_bytes=meta.size_bytes,
        sha256=meta.sha256,
        display_name=meta.display_name,
        create_time=meta.create_time,
    )


def artifact_not_found(field: str | None = None) -> ApiError:
    return ApiError(Status.NOT_FOUND, "ARTIFACT_NOT_FOUND", "artifact not found",
                    {"field": field} if field else None)


def _mismatch() -> ApiError:
    return ApiError(
        Status.INVALID_ARGUMENT,
        "ARTIFACT_INTEGRITY_MISMATCH",
        "the uploaded bytes do not match the declared size and SHA-256; nothing was stored",
    )


def check_input_artifact(
    store: ArtifactStore,
    application_id: str,
    artifact_id: str,
    *,
    image_input: bool,
    field: str = "input.artifact.artifact_id",
) -> ArtifactMeta:
    """Resolve an ``InputPart.artifact`` for ``CreateRun``, or raise the public error.

    Unknown and foreign IDs are ``ARTIFACT_NOT_FOUND``; an image when the worker
    does not advertise ``attachments.image_input`` is ``ARTIFACT_NOT_ACCEPTED``.
    """
    meta = store.lookup(application_id, artifact_id)
    if meta is None:
        raise artifact_not_found(field)
    if meta.is_image and not image_input:
        raise ApiError(
            Status.INVALID_ARGUMENT,
            "ARTIFACT_NOT_ACCEPTED",
            "image artifacts are not accepted as run input by this worker",
            {"field": field, "capability": IMAGE_INPUT_CAPABILITY},
        )
    return meta


if TYPE_CHECKING:
    from ..handlers.pipeline import Pipeline

_PREFIX = "/colossus.api.v1alpha1.ArtifactService/"


class ArtifactService:
    """grpclib handler over an :class:`ArtifactStore`, wired like the other services."""

    def __init__(self, pipeline: Pipeline, store: ArtifactStore) -> None:
        self._pipeline = pipeline
        self._store = store
        self._limits = pipeline.config.limits

    # --- wiring ----------------------------------------------------------------

    async def _upload_rpc(self, stream: Stream[Any, Any]) -> None:
        method = "ArtifactService/UploadArtifact"
        hooks = self._pipeline.hooks
        with self._pipeline.errors(method):
            caller = self._pipeline.authenticate(stream, method)
            await hooks.before_unary(method)
            reply = await self.upload(
                caller, read_messages(stream, UploadArtifactRequest, self._limits.max_request_bytes))
            await hooks.after_unary_commit(method)
            reply = hooks.alter_reply(method, None, reply)
        await stream.send_message(reply)

    async def _download_rpc(self, stream: Stream[Any, Any]) -> None:
        max_bytes = self._limits.max_request_bytes
        await self._pipeline.server_stream(
            stream, "ArtifactService/DownloadArtifact",
            lambda s: read_request(s, DownloadArtifactRequest, max_bytes), self.download)

    def __mapping__(self) -> dict[str, grpclib.const.Handler]:
        return {
            _PREFIX + "UploadArtifact": grpclib.const.Handler(
                self._upload_rpc, grpclib.const.Cardinality.STREAM_UNARY,
                UploadArtifactRequest, UploadArtifactResponse),
            _PREFIX + "DownloadArtifact": grpclib.const.Handler(
                self._download_rpc, grpclib.const.Cardinality.UNARY_STREAM,
                DownloadArtifactRequest, DownloadArtifactResponse),
        }

    # --- handlers ------------------------------------------------------------------

    async def upload(
        self, caller: Principal, messages: AsyncIterator[UploadArtifactRequest]
    ) -> UploadArtifactResponse:
        """Store one upload for ``caller``; nothing is kept unless it verifies."""
        upload = None
        cap = self._limits.max_artifact_chunk_bytes
        try:
            async for message in messages:
                part, value = betterproto2.which_one_of(message, "part")
                if upload is None:
                    if part != "manifest" or value is None:
                        raise invalid("manifest", "the first message must carry the manifest")
                    try:
                        manifest = check_manifest(
                            value.media_type, value.size_bytes, value.sha256,
                            value.display_name, max_bytes=self._limits.max_artifact_bytes,
                        )
                    except TooLargeError:
                        raise ApiError(
                            Status.RESOURCE_EXHAUSTED, "ARTIFACT_TOO_LARGE",
                            "the artifact is larger than the worker accepts",
                            {"field": "manifest.size_bytes", "limit": "max_artifact_bytes"},
                        ) from None
                    except ManifestError as exc:
                        raise invalid(exc.field, str(exc)) from None
                    upload = self._store.begin_upload(caller.application_id, manifest)
                    continue
                if part != "chunk" or value is None:
                    raise invalid("manifest", "only the first message may carry a manifest")
                if len(value) > cap:
                    raise ApiError(
                        Status.INVALID_ARGUMENT, "FIELD_INVALID",
                        f"a chunk may hold at most {cap} bytes",
                        {"field": "chunk", "limit": "max_artifact_chunk_bytes"},
                    )
                try:
                    upload.write(value)
                except IntegrityError:
                    raise _mismatch() from None
            if upload is None:
                raise invalid("manifest", "the upload carried no manifest")
            try:
                meta = await asyncio.to_thread(upload.commit)
            except IntegrityError:
                raise _mismatch() from None
        finally:
            if upload is not None:
                upload.abort()  # no-op after a successful commit
        return UploadArtifactResponse(artifact=to_proto(meta))

    async def download(
        self, caller: Principal, message: DownloadArtifactRequest
    ) -> AsyncIterator[DownloadArtifactResponse]:
        """Metadata first, then the bytes in chunks of ``max_artifact_chunk_bytes``."""
        # The same pre-handler hook as unary calls, so a fault can refuse a download.
        await self._pipeline.hooks.before_unary("ArtifactService/DownloadArtifact")
        artifact_id = message.artifact_id
        if not artifact_id:
            raise invalid("artifact_id", "artifact_id is required")
        meta = self._store.lookup(caller.application_id, artifact_id)
        if meta is None:
            raise artifact_not_found()
        try:
            blob = self._store.open_blob(meta)
        except (OSError, IntegrityError):
            raise ApiError(Status.DATA_LOSS, "JOURNAL_INTEGRITY",
                           "the stored artifact failed its integrity check") from None
        with blob:
            yield DownloadArtifactResponse(artifact=to_proto(meta))
            digest = hashlib.sha256()
            size = self._limits.max_artifact_chunk_bytes
            while chunk := await asyncio.to_thread(blob.read, size):
                digest.update(chunk)
                yield DownloadArtifactResponse(chunk=chunk)
        if digest.hexdigest() != meta.sha256:
            # The client would notice too; failing the stream makes it explicit.
            raise ApiError(Status.DATA_LOSS, "JOURNAL_INTEGRITY",
                           "the stored artifact failed its integrity check")
