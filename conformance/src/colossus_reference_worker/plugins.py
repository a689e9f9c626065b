"""The seam through which optional services (ArtifactService) join the worker.

If the module ``colossus_reference_worker.artifacts`` exists and defines
``build_artifact_service(ctx: ServiceContext) -> ArtifactPlugin``, the server
calls it at start-up, serves ``plugin.servable`` and advertises the
``artifacts`` capability; CreateRun resolves artifact input parts through
``plugin.lookup``.
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


def load_artifact_plugin(ctx: ServiceContext) -> ArtifactPlugin | None:
    try:
        module = importlib.import_module(f"{__package__}.artifacts")
    except ImportError:
        return None
    build = getattr(module, "build_artifact_service", None)
    if build is None:
        return None
    plugin: ArtifactPlugin = build(ctx)
    return plugin
