"""Cargo's build cache for the Rust workspace, kept outside the clone and shared by sessions.

A fresh clone (CI's) has no `target/`, so every session would compile the whole dependency
tree again (minutes on two cores). Here every cargo command of the sessions (and the
conformance run's build of the Rust client) builds into the clone's own target folder under
`~/.cache/colossus-sdks/cargo-clones/`, which starts with every registry crate's build that
any clone made before (noxsessions/_cargo_clones.py): a fresh clone reuses the compiled
dependencies and compiles the repository's own crates from its own sources, never from
another clone's. Cargo names each compiled dependency by a hash of its exact version,
features and flags, so a lock change compiles only what changed, and two locks never mix.
(A folder per lock digest was tried first: every lock edit then cost a cold release build
of the whole tree, 8 minutes here.) Downloads stay in cargo's own home (`CARGO_HOME`,
`~/.cargo` by default), outside the clone too.

Each session runs `cargo fetch --locked` once and then builds with `--locked --offline`,
so a build never resolves or downloads anything the lock file does not name.

`COLOSSUS_CARGO_TARGET_DIR` names the target folder instead, and nothing is shared (a fresh
one for a measurement of a cold build). Cargo locks its target folder itself, so sessions in
parallel lanes wait for each other's builds instead of corrupting them.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

import nox

from noxsessions._cargo_clones import clone_folder, share_back, shared_folder

OFFLINE = ["--locked", "--offline"]


def target_dir() -> Path:
    """The clone's target folder (seeded from the shared builds on first use); the registry
    crates it built go to the shared folder when the process ends, when cargo is done."""
    override = os.environ.get("COLOSSUS_CARGO_TARGET_DIR")
    if override:
        return Path(override)
    folder = clone_folder()
    if folder not in _SHARED_AT_EXIT:
        _SHARED_AT_EXIT.add(folder)
        atexit.register(share_back, folder, shared_folder())
    return folder


_SHARED_AT_EXIT: set[Path] = set()


def mutants_env() -> dict[str, str]:
    """cargo_env() for the mutation harness: a folder apart from the clone's own. A mutated
    copy of a workspace crate has the clone's unit names and newer outputs than the clone's
    sources, so built into the clone's folder it would be taken as fresh by the clone's next
    build (a conformance run would then test a mutant)."""
    override = os.environ.get("COLOSSUS_CARGO_TARGET_DIR")
    folder = Path(f"{override}-mutants") if override else clone_folder(purpose="mutants")
    return {"CARGO_TARGET_DIR": str(folder), "CARGO_TERM_COLOR": "never"}


def cargo_env() -> dict[str, str]:
    """The environment of every cargo command of the sessions."""
    return {"CARGO_TARGET_DIR": str(target_dir()), "CARGO_TERM_COLOR": "never"}


def fetch(session: nox.Session) -> dict[str, str]:
    """Downloads what Cargo.lock names (a no-op when cached) and returns cargo_env()."""
    env = cargo_env()
    session.run("cargo", "fetch", "--locked", external=True, env=env)
    return env
