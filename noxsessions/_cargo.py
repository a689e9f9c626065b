"""Cargo's build cache for the Rust workspace, kept outside the clone and shared by sessions.

A fresh clone (CI's) has no `target/`, so every session would compile the whole dependency
tree again (minutes on two cores). Here every cargo command of the sessions (and the
conformance run's build of the Rust client) builds into `~/.cache/colossus-sdks/cargo-target/`:
a fresh clone reuses the compiled dependencies. One folder serves every Cargo.lock: cargo
names each compiled unit by a hash of its exact version, features and flags, so a lock
change compiles only what changed, and two locks never mix. (A folder per lock digest was
tried first: every lock edit then cost a cold release build of the whole tree, 8 minutes
here.) Cargo never deletes old units, so the folder is emptied when it grows past
`MAX_BYTES`. Downloads stay in cargo's own home (`CARGO_HOME`, `~/.cargo` by default),
outside the clone too.

Each session runs `cargo fetch --locked` once and then builds with `--locked --offline`,
so a build never resolves or downloads anything the lock file does not name.

The workspace's own crates are shared too: cargo names their units by their path within the
workspace, not the clone's, and takes a unit as fresh when its output is newer than its
sources. A fresh clone's sources are newer than anything built before, so CI always compiles
its own code. Two clones used side by side are not: a build in the older clone after an edit
in the newer one leaves units the newer one takes as fresh (a stale conformance client was
seen so). Give such a clone a folder of its own with `COLOSSUS_CARGO_TARGET_DIR`.

`COLOSSUS_CARGO_TARGET_DIR` moves the cache (a fresh one for a measurement of a cold build).
Cargo locks its target folder itself, so sessions in parallel lanes wait for each other's
builds instead of corrupting them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

from noxsessions._cache import cache_dir

ROOT = Path(__file__).resolve().parent.parent
# A fresh build of the workspace (debug and release, every feature) is about 2 GiB.
MAX_BYTES = 12 << 30
OFFLINE = ["--locked", "--offline"]


def target_dir() -> Path:
    """The shared target folder (created; emptied first when it grew past MAX_BYTES)."""
    override = os.environ.get("COLOSSUS_CARGO_TARGET_DIR")
    if override:
        return Path(override)
    target = cache_dir("cargo-target")
    if target.is_dir() and _size(target) > MAX_BYTES:
        shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True, exist_ok=True)
    return target


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def cargo_env() -> dict[str, str]:
    """The environment of every cargo command of the sessions."""
    return {"CARGO_TARGET_DIR": str(target_dir()), "CARGO_TERM_COLOR": "never"}


def fetch(session: nox.Session) -> dict[str, str]:
    """Downloads what Cargo.lock names (a no-op when cached) and returns cargo_env()."""
    env = cargo_env()
    session.run("cargo", "fetch", "--locked", external=True, env=env)
    return env
