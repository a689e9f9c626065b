"""check-generated must catch every way the committed bindings can drift from the
contract, name the offending files, and never change the working tree."""

from __future__ import annotations

import re

import pytest
from conftest import GENERATED_DIRS, Repo, set_breaking_baseline

# One generated file per language to tamper with.
SAMPLES = {
    "python": "v1alpha1/runs_pb2.py",
    "typescript": "colossus/api/v1alpha1/runs_pb.ts",
    "go": "colossus/api/v1alpha1/runs.pb.go",
    "worker": "colossus/api/v1alpha1/__init__.py",
    "rust": "colossus/api/v1alpha1/colossus.api.v1alpha1.tonic.rs",
}


def test_clean_copy_passes(repo: Repo) -> None:
    result = repo.run("check-generated")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_hand_edit_is_named(repo: Repo, language: str) -> None:
    target = f"{GENERATED_DIRS[language]}/{SAMPLES[language]}"
    path = repo.root / target
    path.write_text(path.read_text() + "\n// edited by hand\n")
    before = repo.snapshot()

    result = repo.run("check-generated")

    assert result.returncode != 0
    assert f"stale:   {target}" in result.stdout
    assert "run ./sdk/scripts/generate and commit" in result.stderr
    assert repo.snapshot() == before, "check-generated changed the working tree"


def test_stray_and_missing_files_are_named(repo: Repo) -> None:
    strays = [f"{folder}/notes.txt" for folder in GENERATED_DIRS.values()]
    for stray in strays:
        (repo.root / stray).write_text("written by hand\n")
    missing = f"{GENERATED_DIRS['go']}/colossus/api/v1alpha1/system_grpc.pb.go"
    (repo.root / missing).unlink()

    result = repo.run("check-generated")

    assert result.returncode != 0
    for stray in strays:
        assert f"extra:   {stray}" in result.stdout
    assert f"missing: {missing}" in result.stdout


def test_ignored_files_do_not_count(repo: Repo) -> None:
    cache = repo.root / GENERATED_DIRS["python"] / "v1alpha1" / "__pycache__"
    cache.mkdir()
    (cache / "runs_pb2.cpython-311.pyc").write_bytes(b"\0")
    result = repo.run("check-generated")
    assert result.returncode == 0, result.stdout + result.stderr


def change_a_field_number(repo: Repo) -> None:
    proto = repo.root / "api/colossus/api/v1alpha1/runs.proto"
    text = proto.read_text()
    # Move the first numbered field of the file to an unused number.
    changed, count = re.subn(r"(\b[a-z_][a-z0-9_]* = )1;", r"\g<1>900;", text, count=1)
    assert count == 1
    proto.write_text(changed)


def test_wire_break_fails_breaking_check(repo: Repo) -> None:
    change_a_field_number(repo)
    assert repo.run("generate").returncode == 0  # bindings agree; only the break is left

    result = repo.run("check-generated")
    assert result.returncode != 0
    assert "buf breaking against HEAD" in result.stderr
    assert "stale:" not in result.stdout

    allowed = repo.run("check-generated", "--allow-breaking")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "SKIPPED" in allowed.stderr


def test_committed_break_fails_against_the_accepted_baseline(repo: Repo) -> None:
    change_a_field_number(repo)
    assert repo.run("generate").returncode == 0
    repo.commit("a deliberate break")

    # What CI sees on a clean clone: HEAD is the break itself, the baseline is not.
    result = repo.run("check-generated")
    assert result.returncode != 0
    baseline = (repo.root / "api/breaking-baseline").read_text().split()[-1]
    assert f"buf breaking against {baseline}" in result.stderr

    assert repo.run("check-generated", "--against", "HEAD").returncode == 0
    result = repo.run("check-generated", "--against", "HEAD~1")
    assert result.returncode != 0
    assert "buf breaking against HEAD~1" in result.stderr

    # Accepting the break means moving the baseline on purpose.
    set_breaking_baseline(repo.root, "HEAD")
    repo.commit("accept the break")
    accepted = repo.run("check-generated")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_lint_failure_is_reported(repo: Repo) -> None:
    proto = repo.root / "api/colossus/api/v1alpha1/runs.proto"
    proto.write_text(proto.read_text() + "\nmessage badly_named {}\n")
    assert repo.run("generate").returncode == 0
    result = repo.run("check-generated")
    assert result.returncode != 0
    assert "buf lint" in result.stderr
