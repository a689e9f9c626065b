"""Wheels of the repository's own Python packages, built once per content and shared by sessions.

Installing a package from its folder makes the installer build it again in every session
(about a dozen sessions install ./conformance, five install ./sdk/python). Here each one is
built once into `<cache>/wheels/<folder>-<digest>/` from a private copy of exactly the files
the build reads (pyproject.toml, the README and licence files it names, and src/), so the
digest of those files names the wheel: an edit gives a new digest and a new build, and
nothing left in an in-tree build/ folder can slip into it. Sessions then install the wheel,
which is what a user gets, never an editable link.

`COLOSSUS_WHEEL_CACHE` moves the cache (bench_ci gives every configuration a fresh one);
`COLOSSUS_BUILD_IN_SESSION=1` turns the cache off, so each session builds from the folder
as before (the baseline of bench_ci).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nox

from noxsessions._cache import cache_dir as cache_dir_of

ROOT = Path(__file__).resolve().parent.parent
# What a build of these setuptools projects reads: the metadata files and the src/ tree.
BUILD_INPUTS = ("pyproject.toml", "setup.cfg", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "src")
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".mypy_cache", ".ruff_cache")


# The exact versions each local package's dependencies are installed at (as constraints),
# so a session that installs the package with its dependencies gets the same stack on
# every machine: the SDK's pinned runtime stack, the worker's indirect dependencies.
CONSTRAINTS = {
    "conformance": ROOT / "conformance" / "constraints.txt",
    "sdk/python": ROOT / "sdk" / "python" / "requirements-dev.txt",
}


def cache_dir() -> Path:
    return Path(os.environ.get("COLOSSUS_WHEEL_CACHE") or cache_dir_of("wheels"))


def install_local(session: nox.Session, *folders: Path | str, deps: bool = True) -> None:
    """Installs the repository's own packages (as wheels), with their pinned dependencies."""
    paths = [Path(f) if Path(f).is_absolute() else ROOT / f for f in folders]
    if os.environ.get("COLOSSUS_BUILD_IN_SESSION") == "1":
        targets = [str(p) for p in paths]
    else:
        targets = [local_wheel(session, p) for p in paths]
    constraints: list[str] = []
    if deps:
        for path in paths:
            pins = CONSTRAINTS.get(path.relative_to(ROOT).as_posix()) if path.is_relative_to(ROOT) else None
            if pins is not None:
                constraints += ["-c", str(pins)]
    session.install(*([] if deps else ["--no-deps"]), *constraints, *targets)


def local_wheel(session: nox.Session, folder: Path) -> str:
    """The wheel of ``folder`` for its current content, built now if no session built it yet."""
    digest = content_digest(folder)
    target = cache_dir() / f"{folder.name}-{digest[:20]}"
    target.parent.mkdir(parents=True, exist_ok=True)
    # Sessions in parallel lanes (./noxw) that need the same wheel: one builds, the others
    # wait for it and reuse it.
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _reuse_or_build(session, folder, digest, target)


def _reuse_or_build(session: nox.Session, folder: Path, digest: str, target: Path) -> str:
    found = sorted(target.glob("*.whl"))
    if len(found) == 1:
        session.log(f"{folder.relative_to(ROOT)}: reusing {found[0].name} ({digest[:12]})")
        return str(found[0])
    with tempfile.TemporaryDirectory(prefix="wheel-", dir=target.parent) as tmp:
        source = Path(tmp) / folder.name
        source.mkdir()
        for name in BUILD_INPUTS:
            path = folder / name
            if path.is_dir():
                shutil.copytree(path, source / name, ignore=SKIPPED)
            elif path.is_file():
                shutil.copy2(path, source / name)
        out = Path(tmp) / "out"
        session.log(f"{folder.relative_to(ROOT)}: building its wheel once ({digest[:12]})")
        subprocess.run(_build_command(source, out), check=True, stdout=subprocess.DEVNULL)
        try:
            out.rename(target)  # atomic: a concurrent build of the same digest keeps its own
        except OSError:
            if not any(target.glob("*.whl")):
                raise
    (wheel,) = target.glob("*.whl")
    return str(wheel)


def content_digest(folder: Path) -> str:
    """sha256 over the relative path and bytes of every build input of ``folder``."""
    h = hashlib.sha256()
    for name in BUILD_INPUTS:
        path = folder / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if not file.is_file() or _skipped(file.relative_to(folder)):
                continue
            h.update(str(file.relative_to(folder)).encode() + b"\0")
            h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()


def _skipped(relative: Path) -> bool:
    return any(
        part in ("__pycache__", ".mypy_cache", ".ruff_cache") or part.endswith((".egg-info", ".pyc"))
        for part in relative.parts
    )


def build_sdist_and_wheel(session: nox.Session, source: Path, out: Path) -> None:
    """`python -m build` (the session needs the `build` package): the sdist, then the wheel
    built from it, as PyPI users get them. Its isolated build environments are filled by the
    pinned uv beside nox when there is one (pip took 7 CPU-seconds per build to fill them)."""
    uv = _pinned_uv()
    installer = ["--installer", "uv"] if uv is not None else []
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    session.run("python", "-m", "build", *installer, "--outdir", str(out), str(source), env={"PATH": path})


def _pinned_uv() -> Path | None:
    """The uv pinned next to nox (noxsessions/requirements.txt), when there is one."""
    uv = Path(sys.executable).parent / "uv"
    return uv if uv.is_file() else None


def _build_command(source: Path, out: Path) -> list[str]:
    # pip is the fallback without the pinned uv.
    uv = _pinned_uv()
    if uv is not None:
        return [str(uv), "build", "--quiet", "--wheel", "--out-dir", str(out), str(source)]
    pip = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
    return [*pip, "--wheel-dir", str(out), str(source)]
