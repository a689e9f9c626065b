"""Helpers for the command-line tests: run a subcommand, and fingerprint a folder."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "colossus_reference_worker.cli"]


def cli(*args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, **kw)


def cli_json(*args: str) -> Any:
    out = cli(*args, "--json")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return lines


def folder_fingerprint(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry's mode, modification time and content hash (files) under ``folder``."""
    result: dict[str, tuple[int, int, str]] = {}
    for path in sorted(folder.rglob("*")):
        st = os.lstat(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        result[str(path.relative_to(folder))] = (st.st_mode, st.st_mtime_ns, digest)
    return result
