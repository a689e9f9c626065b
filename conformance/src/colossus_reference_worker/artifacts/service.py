"""``ArtifactService``: caller-owned chunked upload and download.

Authentication and the scope check (``artifacts:write`` / ``artifacts:read``)
happen in the server's request pipeline before these methods run; the
handler asks ``principal()`` who is calling. Every artifact is visible only to
the application that uploaded it: another application's ID is answered
exactly like an unknown one, with ``ARTIFACT_NOT_FOUND``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable

import betterproto2
from grpclib.const import Status

from .._gen.colossus.api.v1alpha1 import (
    Artifact,
    ArtifactServiceBase,
    DownloadArtifactRequest,
    DownloadArtifactResponse,
    UploadArtifactRequest,
    UploadArtifactResponse,
)
from ..config import IMAGE_INPUT_CAPABILITY, Limits
from ..credentials import Principal
from ..errors import ApiError, invalid
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


class ArtifactService(ArtifactServiceBase):
    """grpclib handler over an :class:`ArtifactStore`."""

    def __init__(
        self, store: ArtifactStore, limits: Limits, principal: Callable[[], Principal]
    ) -> None:
        self._store = store
        self._limits = limits
        self._principal = principal

    async def upload_artifact(
        self, messages: AsyncIterator[UploadArtifactRequest]
    ) -> UploadArtifactResponse:
        caller = self._principal()
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

    async def download_artifact(
        self, message: DownloadArtifactRequest
    ) -> AsyncIterator[DownloadArtifactResponse]:
        caller = self._principal()
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
