"""Where the examples find the worker program (not part of the SDK)."""

from __future__ import annotations

import os
import shutil
import sys


def worker_executable() -> str:
    """``$COLOSSUS_REFERENCE_WORKER``, else ``colossus-reference-worker`` on ``PATH``."""
    found = os.environ.get("COLOSSUS_REFERENCE_WORKER") or shutil.which("colossus-reference-worker")
    if not found:
        sys.exit("install the reference worker first: pip install ./conformance")
    return found
