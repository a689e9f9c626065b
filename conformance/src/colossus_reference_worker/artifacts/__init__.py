"""Artifacts (capability ``artifacts``): storage and the ``ArtifactService`` handler.

For ``CreateRun`` validation, resolve input parts with
:func:`check_input_artifact` (raises the public error) or
:meth:`ArtifactStore.lookup` (returns :class:`ArtifactMeta` or ``None``).
"""

from __future__ import annotations

from .service import ArtifactService, check_input_artifact, to_proto
from .store import ArtifactMeta, ArtifactStore

__all__ = [
    "ArtifactMeta",
    "ArtifactService",
    "ArtifactStore",
    "check_input_artifact",
    "to_proto",
]
