"""The seam through which optional services (ArtifactService) join the worker.

If the package ``colossus_reference_worker.artifacts`` exists, the server
builds its plugin at start-up, serves ``plugin.servable`` and advertises the
``artifacts`` capability; CreateRun resolves artifact input parts through
``plugin.lookup``. The package may define
``build_artifact_service(ctx: ServiceContext) -> ArtifactPlugin``; otherwise
its ``ArtifactStore(state_dir, max_artifact_bytes=...)`` and
``ArtifactService(pipeline, store)`` are composed here.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .config import WorkerConfig
from .handlers.pipeline import Pipeline
from .journal import Journal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceContext:
    """What an optional service may use."""

    config: WorkerConfig
    pipeline: Pipeline  # authenticate(stream, method) and errors(method)
    journal: Journal
    state_dir: Path


class ArtifactPlugin(Protocol):
    servable: Any  # an object with grpclib's ``__mapping__()``

    def lookup(self, application_id: str, artifact_id: str) -> str | None:
        """The media type of the caller's artifact, or ``None`` when not visible."""

    def close(self) -> None:
        """Release storage at shutdown."""


class _ComposedArtifacts:
    def __init__(self, module: Any, ctx: ServiceContext) -> None:
        self._store = module.ArtifactStore(
            ctx.state_dir, max_artifact_bytes=ctx.config.limits.max_artifact_bytes
        )
        self.servable = module.ArtifactService(ctx.pipeline, self._store)

    def lookup(self, application_id: str, artifact_id: str) -> str | None:
        meta = self._store.lookup(application_id, artifact_id)
        return None if meta is None else str(meta.media_type)

    def close(self) -> None:
        close = getattr(self._store, "close", None)
        if close is not None:
            close()


def load_artifact_plugin(ctx: ServiceContext) -> ArtifactPlugin | None:
    try:
        module = importlib.import_module(f"{__package__}.artifacts")
    except ImportError:
        return None
    build = getattr(module, "build_artifact_service", None)
    if build is not None:
        plugin: ArtifactPlugin = build(ctx)
        return plugin
    if hasattr(module, "ArtifactStore") and hasattr(module, "ArtifactService"):
        return _ComposedArtifacts(module, ctx)
    log.warning("the artifacts package offers no service; artifacts stay disabled")
    return None
