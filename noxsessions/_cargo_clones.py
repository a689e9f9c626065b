"""A Cargo target folder per clone, seeded from the dependency builds every clone shares.

Cargo takes a unit of a path crate (the workspace's own, the plugin's) as fresh when its
output is newer than its sources, and names it by its path within the workspace, not the
clone's. In one target folder shared by two clones, a build in one after an edit in the
other left units the second took as fresh: a stale conformance client was seen so. So each
clone builds in a folder of its own, `<cache>/cargo-clones/<name>-<key>/`, keyed by the
clone's real path and a token written once into its git-ignored `.cache/`: a fresh clone at
the same path (CI's, after `rm -rf`) has no token yet, so it gets a new folder.

Units of registry crates are named by a hash of their exact version, features and flags, and
their sources never change, so those are shared: a new clone's folder starts as a copy of
the registry crates' units in `<cache>/cargo-target/` (every profile folder), and none of
the units of a path crate (the workspace's members, the plugin, the scratch crates of
rust_readme and release), so cargo must build those from this clone's sources. A unit's
files all end in the hash of its `.fingerprint/<package>-<hash>` folder, which names its
package; a package is a registry crate when the repository's Cargo.lock files say so. The
registry crates' units a clone built that the shared folder lacks are copied back
(share_back, when a session's nox process ends). Copies, not hard links: cargo rewrites a unit's fingerprint and
build-script output files in place (`fs::write`), which would change the shared files
through a link. Copies go through a staging folder and a rename, fingerprints last, so a
stopped copy never leaves a unit that looks fresh and is not whole.

Cargo locks a profile folder with flock on its `.cargo-lock` while it builds there; the
seed and the copy back take the same locks, so they never read a unit being written.
Folders not used for a while go first when the clones' folders pass MAX_CLONE_BYTES
together; a clone's own folder is seeded anew when it alone passes MAX_BYTES.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterable, Iterator
from hashlib import sha256
from pathlib import Path

from noxsessions._cache import cache_dir

ROOT = Path(__file__).resolve().parent.parent
# The lock files of the repository's Cargo workspaces: the main one, the Tauri plugin's own
# and its example app's.
LOCK_FILES = [
    "Cargo.lock",
    "crates/tauri-plugin-colossus/Cargo.lock",
    "crates/tauri-plugin-colossus/examples/desktop/Cargo.lock",
]
# The shared folder's registry units are about 4.4 GiB today (debug and release, every
# feature, the plugin's tauri tree); a clone's folder adds its own crates' builds to them.
# Together the clones' folders keep room for the working checkout and a CI clone.
MAX_BYTES = 12 << 30
MAX_CLONE_BYTES = 20 << 30
# Where a profile folder keeps each kind of unit; everything else in it (uplifted binaries,
# examples, incremental state) belongs to path crates.
UNIT_FOLDERS = ["deps", "build", ".fingerprint"]
# `<name>-<16 hex digits>[.<extension>]`: every unit's file or folder in UNIT_FOLDERS.
UNIT = re.compile(r"^(?P<name>.+)-(?P<hash>[0-9a-f]{16})(\..+)?$")
STAGING = ".staging-"
# Seconds after which a staging folder is taken as left by a stopped seed.
STOPPED_AFTER = 86400


def shared_folder() -> Path:
    """The registry crates' units every clone's folder starts from."""
    return cache_dir("cargo-target")


def clone_folder(root: Path = ROOT, purpose: str = "") -> Path:
    """This clone's target folder, seeded on first use (and when it grew past MAX_BYTES).
    A `purpose` names a second folder of the clone's, for builds that must never mix with its
    own (the mutation harness's mutated crates)."""
    clones = cache_dir("cargo-clones")
    suffix = f"-{purpose}" if purpose else ""
    folder = clones / f"{root.resolve().name}-{clone_key(root)}{suffix}"
    clones.mkdir(parents=True, exist_ok=True)
    # Sessions of one clone start side by side: one seeds, the others wait and use it.
    with flock(clones / f"{folder.name}.lock", fcntl.LOCK_EX):
        if folder.is_dir() and _size(folder) > MAX_BYTES and _idle(folder):
            shutil.rmtree(folder)
        if not folder.is_dir():
            seed(folder, shared_folder(), registry_packages(root))
            evict(clones, keep=folder)
    folder.touch()  # the folder's mtime says when a session last used it, for evict()
    return folder


def clone_key(root: Path) -> str:
    """The clone's real path and its token: a new clone at the same path has a new token."""
    token_file = root / ".cache" / "cargo-clone-token"
    if not token_file.is_file():
        token_file.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError), open(token_file, "x") as out:
            out.write(secrets.token_hex(16) + "\n")
    token = token_file.read_text().strip()
    return sha256(f"{root.resolve()}\0{token}".encode()).hexdigest()[:16]


def registry_packages(root: Path) -> set[str]:
    """The packages the clone's Cargo.lock files take from a registry (or git), less any
    name that one of them also has as a path crate."""
    remote: set[str] = set()
    local: set[str] = set()
    for name in LOCK_FILES:
        if (root / name).is_file():
            for package in tomllib.loads((root / name).read_text()).get("package", []):
                (remote if "source" in package else local).add(package["name"])
    return remote - local


def shared_units(profile: Path, kind: str, registry: set[str]) -> list[str]:
    """The entries of `profile/kind` that belong to units of registry packages."""
    if not (profile / kind).is_dir() or not (profile / ".fingerprint").is_dir():
        return []
    units = {m["hash"] for e in os.listdir(profile / ".fingerprint") if (m := UNIT.match(e)) and m["name"] in registry}
    return [e for e in os.listdir(profile / kind) if (m := UNIT.match(e)) and m["hash"] in units]


def profiles(target: Path) -> list[Path]:
    """The profile folders of a target folder (debug, release, ...)."""
    return sorted(p for p in target.iterdir() if (p / ".fingerprint").is_dir()) if target.is_dir() else []


@contextlib.contextmanager
def profile_lock(profile: Path, how: int) -> Iterator[bool]:
    """Cargo's own lock of a profile folder (see flock)."""
    profile.mkdir(parents=True, exist_ok=True)
    with flock(profile / ".cargo-lock", how) as taken:
        yield taken


@contextlib.contextmanager
def flock(path: Path, how: int) -> Iterator[bool]:
    """Holds flock(how) on `path`; yields False when LOCK_NB finds it taken. Closing the
    file releases the lock."""
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, how)
        except BlockingIOError:
            yield False
        else:
            yield True


def seed(folder: Path, shared: Path, registry: set[str]) -> None:
    """A new target folder holding the shared folder's dependency units, all or nothing."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{folder.name}{STAGING}", dir=folder.parent))
    for profile in profiles(shared):
        mine = partial / profile.name
        with profile_lock(profile, fcntl.LOCK_SH):
            for kind in UNIT_FOLDERS:
                _copy(profile / kind, shared_units(profile, kind, registry), mine / kind)
    os.rename(partial, folder)


def share_back(folder: Path, shared: Path, root: Path = ROOT) -> None:
    """Copies the dependency units of `folder` that `shared` lacks into it; first empties
    `shared` when it grew past MAX_BYTES (cargo never deletes an old unit). A profile that
    cargo is building in right now is left for the next time."""
    registry = registry_packages(root)
    if shared.is_dir() and _size(shared) > MAX_BYTES:
        for theirs in profiles(shared):
            with profile_lock(theirs, fcntl.LOCK_EX):
                for kind in UNIT_FOLDERS:
                    shutil.rmtree(theirs / kind, ignore_errors=True)
    for profile in profiles(folder):
        theirs = shared / profile.name
        with profile_lock(profile, fcntl.LOCK_EX | fcntl.LOCK_NB) as free:
            if not free:
                continue
            with profile_lock(theirs, fcntl.LOCK_EX):
                _copy_new_units(profile, theirs, registry)


def _copy_new_units(profile: Path, theirs: Path, registry: set[str]) -> None:
    for stale in theirs.glob(f"{STAGING}*"):  # left by a stopped copy
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING, dir=theirs))
    try:
        # Fingerprints last: a unit counts as built only once its fingerprint is in place.
        for kind in UNIT_FOLDERS:
            have = set(os.listdir(theirs / kind)) if (theirs / kind).is_dir() else set()
            new = [e for e in shared_units(profile, kind, registry) if e not in have]
            _copy(profile / kind, new, staging / kind)
            (theirs / kind).mkdir(exist_ok=True)
            for entry in new:
                os.rename(staging / kind / entry, theirs / kind / entry)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy(source: Path, entries: Iterable[str], into: Path, batch: int = 500) -> None:
    """`cp -a` (times kept to the nanosecond: cargo compares them) of source's entries."""
    into.mkdir(parents=True, exist_ok=True)
    entries = list(entries)
    for start in range(0, len(entries), batch):
        chunk = [str(source / e) for e in entries[start : start + batch]]
        subprocess.run(["cp", "-a", "--reflink=auto", "-t", str(into), *chunk], check=True)


def evict(clones: Path, keep: Path) -> None:
    """Removes the least recently used clone folders (never `keep`, nor one in use) until all
    of them together fit in MAX_CLONE_BYTES, and what a stopped seed left a day ago."""
    for stale in clones.glob(f"*{STAGING}*"):
        if time.time() - stale.stat().st_mtime > STOPPED_AFTER:
            shutil.rmtree(stale, ignore_errors=True)
    folders = sorted((p for p in clones.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    sizes = {p: _size(p) for p in folders}
    total = sum(sizes.values())
    for folder in folders:
        if total <= MAX_CLONE_BYTES:
            return
        if folder == keep or STAGING in folder.name:
            continue
        # Its clone's lock keeps a session from starting there meanwhile.
        with flock(clones / f"{folder.name}.lock", fcntl.LOCK_EX | fcntl.LOCK_NB) as taken:
            if taken and _idle(folder):
                shutil.rmtree(folder, ignore_errors=True)
                total -= sizes[folder]


def _idle(folder: Path) -> bool:
    with contextlib.ExitStack() as stack:
        return all(stack.enter_context(profile_lock(p, fcntl.LOCK_EX | fcntl.LOCK_NB)) for p in profiles(folder))


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
