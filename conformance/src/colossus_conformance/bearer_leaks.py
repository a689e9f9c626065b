"""The C5 rule as the runner checks it: no bearer in what a client reports or a process logs.

A bearer counts as leaked when one the runner handed out appears verbatim, or when any
text of the grammar the worker issues appears (a sidecar's bootstrap bearer, a rotated
one), since the runner never learns those.
"""

from __future__ import annotations

import re
from pathlib import Path

# Any bearer this worker issues, enrolled by the runner or not (a sidecar's bootstrap
# bearer, a rotated one): the prefix and 43 base64url characters (docs/sidecar.md).
BEARER_GRAMMAR = re.compile(r"cb1_[A-Za-z0-9_-]{43}")


def contains_secret(text: str, bearers: list[str]) -> bool:
    return any(len(b) >= 8 and b in text for b in bearers) or BEARER_GRAMMAR.search(text) is not None


def log_size(path: Path) -> int:
    """Where a log ends now: what a case adds is read from there (``read_from``)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", "replace")
    except OSError:
        return ""
