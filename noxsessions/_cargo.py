"""Cargo's build cache for the Rust workspace, kept outside the clone and shared by sessions.

A fresh clone (CI's) has no `target/`, so every session would compile the whole dependency
tree again (a few minutes on two cores). Here every cargo command of the sessions builds
into `~/.cache/colossus-sdks/cargo-target/<digest of Cargo.lock>/`: a clone with the same
lock file reuses the compiled dependencies, and a lock change starts a new folder instead
of mixing two dependency sets. The few most recently used folders are kept, the rest
removed. Downloads stay in cargo's own home (`CARGO_HOME`, `~/.cargo` by default), which
is outside the clone too.

Each session runs `cargo fetch --locked` once and then builds with `--locked --offline`,
so a build never resolves or downloads anything the lock file does not name.

`COLOSSUS_CARGO_TARGET_DIR` moves the cache (a fresh one for a measurement of a cold build).
Cargo locks its target folder itself, so sessions in parallel lanes wait for each other's
builds instead of corrupting them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "Cargo.lock"
# Target folders kept besides the current one (an older lock on another branch).
KEEP = 2
OFFLINE = ["--locked", "--offline"]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "colossus-sdks" / "cargo-target"


def target_dir() -> Path:
    """The target folder for the current Cargo.lock (created; older ones pruned)."""
    override = os.environ.get("COLOSSUS_CARGO_TARGET_DIR")
    if override:
        return Path(override)
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]
    target = cache_root() / digest
    target.mkdir(parents=True, exist_ok=True)
    os.utime(target)  # the folder's mtime says when a session last used it
    _prune(target)
    return target


def _prune(current: Path) -> None:
    others = sorted(
        (p for p in current.parent.iterdir() if p.is_dir() and p != current),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in others[KEEP:]:
        # A folder unused for a day is not in use by a build of another lane.
        if time.time() - old.stat().st_mtime > 86_400:
            shutil.rmtree(old, ignore_errors=True)


def cargo_env() -> dict[str, str]:
    """The environment of every cargo command of the sessions."""
    return {"CARGO_TARGET_DIR": str(target_dir()), "CARGO_TERM_COLOR": "never"}


def fetch(session: nox.Session) -> dict[str, str]:
    """Downloads what Cargo.lock names (a no-op when cached) and returns cargo_env()."""
    env = cargo_env()
    session.run("cargo", "fetch", "--locked", external=True, env=env)
    return env
