"""Where built tools and artifacts are cached: outside the clone, so a fresh clone (CI's,
or a second worktree) reuses what an earlier one built instead of building it again.

    $COLOSSUS_CACHE                      when set
    $XDG_CACHE_HOME/colossus-sdks        else
    ~/.cache/colossus-sdks               else

Every entry under it is keyed by the digest of the pins it was built from (or checks a
stamp of them before use), so clones at different revisions never use each other's tools.
Cargo's output is kept per clone instead (noxsessions/_cargo_clones.py).
sdk/scripts/codegen/lib.sh and ./noxw compute the same root in bash.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    override = os.environ.get("COLOSSUS_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "colossus-sdks"


def cache_dir(name: str) -> Path:
    """`<cache root>/<name>` (not created)."""
    return cache_root() / name
