"""generate must be reproducible and must leave the tree untouched when it fails."""

from __future__ import annotations

import stat

import pytest
from conftest import Repo


def test_twice_gives_identical_bytes(repo: Repo) -> None:
    before = repo.snapshot()
    first = repo.run("generate")
    assert first.returncode == 0, first.stderr
    once = repo.snapshot()
    second = repo.run("generate")
    assert second.returncode == 0, second.stderr
    # Same bytes on both runs, and the same as those committed from another checkout at
    # another absolute path.
    assert repo.snapshot() == once == before


def break_proto_syntax(repo: Repo) -> None:
    proto = repo.root / "api/colossus/api/v1alpha1/runs.proto"
    proto.write_text(proto.read_text() + "\nmessage Unfinished {\n")


def break_python_plugin(repo: Repo) -> None:
    plugin = repo.root / "sdk/scripts/codegen/protoc-gen-colossus-python"
    plugin.write_text("#!/bin/sh\necho 'simulated plugin failure' >&2\nexit 3\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("breakage", [break_proto_syntax, break_python_plugin])
def test_failure_leaves_tree_unchanged(repo: Repo, breakage) -> None:  # type: ignore[no-untyped-def]
    breakage(repo)
    before = repo.snapshot()

    result = repo.run("generate")

    assert result.returncode != 0
    assert "the working tree was not changed" in result.stderr
    assert repo.snapshot() == before
    leftovers = list((repo.root / ".cache").glob("generate.*"))
    assert leftovers == []
