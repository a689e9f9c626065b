"""Tests of the per-clone Cargo target folders (noxsessions/_cargo_clones.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from noxsessions import _cargo_clones
from noxsessions._cargo_clones import clone_folder, clone_key, seed, share_back

TargetOf = Callable[[Path], Path]
MAIN_RS = 'fn main() {{ println!("{}"); }}\n'


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def two_clones(tmp_path: Path) -> tuple[Path, Path]:
    """(older, newer): clones of one repository of a one-crate workspace (no dependency)
    whose binary prints "older" at the first commit and "newer" at the second. The older
    clone is made first, as a working checkout that was there before a new clone came."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "Cargo.toml").write_text('[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n')
    (repo / "src/main.rs").write_text(MAIN_RS.format("older"))
    _git(repo, "init", "--quiet")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "older")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "src/main.rs").write_text(MAIN_RS.format("newer"))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", "newer")
    older, newer = tmp_path / "older", tmp_path / "newer"
    _git(tmp_path, "clone", "--quiet", "--no-local", str(repo), str(older))
    _git(older, "checkout", "--quiet", first)
    _git(tmp_path, "clone", "--quiet", "--no-local", str(repo), str(newer))
    return older, newer


def build_and_run(clone: Path, target: Path) -> str:
    env = {**os.environ, "CARGO_TARGET_DIR": str(target), "CARGO_TERM_COLOR": "never"}
    subprocess.run(["cargo", "build", "--quiet", "--offline"], cwd=clone, env=env, check=True)
    return subprocess.run([target / "debug/tiny"], capture_output=True, text=True, check=True).stdout.strip()


def each_clone_runs_its_own_code(older: Path, newer: Path, target_of: TargetOf) -> None:
    """The newer clone builds first, then the older one: each must run its own sources."""
    assert build_and_run(newer, target_of(newer)) == "newer"
    ran = build_and_run(older, target_of(older))
    assert ran == "older", f"stale build: the older clone ran the newer clone's binary (printed {ran!r})"


def old_shared_target_dir(cache: Path) -> TargetOf:
    """Reference: noxsessions/_cargo.target_dir() before the per-clone folders, one target
    folder for every clone, in which cargo takes their units as fresh by modification time."""
    return lambda _clone: cache / "cargo-target"


def test_an_older_clone_runs_its_own_code_after_a_newer_clone_built(
    two_clones: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLOSSUS_CACHE", str(tmp_path / "cache"))
    older, newer = two_clones
    each_clone_runs_its_own_code(older, newer, clone_folder)
    # Sharing back what the newer clone built gives the older one nothing of its own crate.
    share_back(clone_folder(newer), _cargo_clones.shared_folder(), newer)
    assert build_and_run(older, clone_folder(older)) == "older"


def test_the_old_shared_folder_hands_an_older_clone_the_newer_build(
    two_clones: tuple[Path, Path], tmp_path: Path
) -> None:
    # The failure the per-clone folders exist to prevent: the same check, against the old
    # scheme kept above as a reference, fails. If it ever passed, the test above would
    # prove nothing.
    older, newer = two_clones
    with pytest.raises(AssertionError, match="stale build: the older clone ran the newer clone's binary"):
        each_clone_runs_its_own_code(older, newer, old_shared_target_dir(tmp_path / "cache"))


def mutant_then_clone(clone: Path, tmp_path: Path, mutant_target: Path) -> str:
    """Builds the clone, then a mutated copy of it (as the mutation harness does) into
    `mutant_target`, then the clone again; returns what the clone's binary prints."""
    assert build_and_run(clone, clone_folder(clone)) == "older"
    copy = tmp_path / "mutant-copy"
    shutil.copytree(clone, copy, ignore=shutil.ignore_patterns(".git", ".cache"))
    (copy / "src/main.rs").write_text(MAIN_RS.format("mutant"))
    assert build_and_run(copy, mutant_target) == "mutant"
    return build_and_run(clone, clone_folder(clone))


def test_a_mutated_copy_never_reaches_the_clones_build(
    two_clones: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLOSSUS_CACHE", str(tmp_path / "cache"))
    older, _ = two_clones
    mutants = clone_folder(older, purpose="mutants")
    assert mutants != clone_folder(older)
    assert mutant_then_clone(older, tmp_path, mutants) == "older"


def test_a_mutated_copy_built_in_the_clones_folder_poisons_it(
    two_clones: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Why the harness has a folder of its own: sharing the clone's, its next build runs the mutant.
    monkeypatch.setenv("COLOSSUS_CACHE", str(tmp_path / "cache"))
    older, _ = two_clones
    assert mutant_then_clone(older, tmp_path, clone_folder(older)) == "mutant"


def test_a_new_clone_at_the_same_path_gets_a_new_key(tmp_path: Path) -> None:
    clone = tmp_path / "main"
    clone.mkdir()
    first = clone_key(clone)
    assert clone_key(clone) == first  # the same clone keeps its folder
    shutil.rmtree(clone)
    clone.mkdir()
    assert clone_key(clone) != first


def _unit(profile: Path, package: str, unit_hash: str, crate: str) -> None:
    (profile / ".fingerprint" / f"{package}-{unit_hash}").mkdir(parents=True)
    (profile / ".fingerprint" / f"{package}-{unit_hash}" / f"lib-{crate}").write_text("fingerprint")
    (profile / "deps").mkdir(exist_ok=True)
    (profile / "deps" / f"lib{crate}-{unit_hash}.rlib").write_text("rlib")
    (profile / "deps" / f"{crate}-{unit_hash}.d").write_text("dep-info")
    (profile / "build" / f"{package}-{unit_hash}").mkdir(parents=True)


def _lock(clone: Path) -> None:
    clone.mkdir(parents=True, exist_ok=True)
    (clone / "Cargo.lock").write_text(
        'version = 4\n\n[[package]]\nname = "serde"\nversion = "1.0.0"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n\n'
        '[[package]]\nname = "tiny"\nversion = "0.1.0"\n'
    )


def test_a_seed_holds_the_registry_crates_units_and_none_of_the_path_crates(tmp_path: Path) -> None:
    clone, shared = tmp_path / "clone", tmp_path / "shared"
    _lock(clone)
    for profile in ("debug", "release"):
        _unit(shared / profile, "serde", "0123456789abcdef", "serde")
        _unit(shared / profile, "tiny", "fedcba9876543210", "tiny")
        (shared / profile / "tiny").write_text("an uplifted binary")
        (shared / profile / "incremental").mkdir()
    folder = tmp_path / "folder"
    seed(folder, shared, _cargo_clones.registry_packages(clone))
    kept = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or not any(p.iterdir()))
    assert kept == [
        f"{profile}/{entry}"
        for profile in ("debug", "release")
        for entry in (
            ".fingerprint/serde-0123456789abcdef/lib-serde",
            "build/serde-0123456789abcdef",
            "deps/libserde-0123456789abcdef.rlib",
            "deps/serde-0123456789abcdef.d",
        )
    ]


def test_share_back_copies_new_registry_units_only(tmp_path: Path) -> None:
    clone, shared, folder = tmp_path / "clone", tmp_path / "shared", tmp_path / "folder"
    _lock(clone)
    _unit(shared / "debug", "serde", "0123456789abcdef", "serde")
    (shared / "debug/deps/libserde-0123456789abcdef.rlib").write_text("the shared one")
    _unit(folder / "debug", "serde", "0123456789abcdef", "serde")
    _unit(folder / "debug", "serde", "1111111111111111", "serde")  # other features: a new unit
    _unit(folder / "debug", "tiny", "fedcba9876543210", "tiny")
    share_back(folder, shared, clone)
    assert sorted(p.name for p in (shared / "debug/.fingerprint").iterdir()) == [
        "serde-0123456789abcdef",
        "serde-1111111111111111",
    ]
    assert (shared / "debug/deps/libserde-1111111111111111.rlib").is_file()
    assert (shared / "debug/deps/libserde-0123456789abcdef.rlib").read_text() == "the shared one"
    assert not any(p.name.startswith(".staging-") for p in (shared / "debug").iterdir())


def test_eviction_removes_the_least_recently_used_folders_but_never_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cargo_clones, "MAX_CLONE_BYTES", 250)
    for age, name in enumerate(["newest", "middle", "oldest", "current"]):  # current: least recent
        (tmp_path / name / "debug/.fingerprint").mkdir(parents=True)
        (tmp_path / name / "debug/deps").write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1_000_000 - age, 1_000_000 - age))
    _cargo_clones.evict(tmp_path, keep=tmp_path / "current")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["current", "newest"]
