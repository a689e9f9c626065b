"""Fixtures for the codegen script tests. Every test gets its own copy of the repository;
the real working tree is only read."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from repo_copy import ROOT, copy_repo, set_breaking_baseline  # noqa: E402,F401

GENERATED_DIRS = {
    "python": "sdk/python/src/colossus_agent_client/api",
    "typescript": "sdk/typescript/src/gen",
    "go": "sdk/go/gen",
    "worker": "conformance/src/colossus_reference_worker/_gen",
    "rust": "crates/colossus-sdk/src/gen",
}


@dataclass
class Repo:
    root: Path

    def run(self, script: str, *args: str) -> subprocess.CompletedProcess[str]:
        # The copy holds the same pins, so lib.sh finds the same tool cache outside it.
        env = dict(os.environ)
        return subprocess.run(
            [f"./sdk/scripts/{script}", *args],
            cwd=self.root, env=env, capture_output=True, text=True, timeout=600,
        )

    def snapshot(self) -> dict[str, str]:
        """SHA-256 of every file in the copy, .git and .cache excepted."""
        hashes = {}
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root).as_posix()
            if rel.split("/")[0] in {".git", ".cache"} or not path.is_file():
                continue
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        return hashes

    def generated_files(self, language: str) -> list[Path]:
        return sorted(p for p in (self.root / GENERATED_DIRS[language]).rglob("*") if p.is_file())

    def commit(self, message: str) -> None:
        for args in (["add", "-A"], ["commit", "-q", "-m", message]):
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
                cwd=self.root, check=True,
            )


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(copy_repo(tmp_path / "repo"))
