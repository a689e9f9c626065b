"""Commit subjects after the rule's first commit have an area prefix and at most 72 characters."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from noxsessions._commit_form import FIRST_CHECKED_AFTER, problem, subjects_since

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "subject",
    ["worker: restart in place from the fault channel", "sdk/go, sdk/python: one key on every refusal", "nox: x"],
)
def test_a_well_formed_subject_passes(subject: str) -> None:
    assert problem(subject) is None


@pytest.mark.parametrize(
    ("subject", "why"),
    [
        ("Python mutant list: idle-timeout-ignored edits only the sync Runs", "area prefix"),
        ("worker: " + "x" * 70, "characters"),
        ("Worker: capitalised area", "area prefix"),
        ("worker:no space", "area prefix"),
    ],
)
def test_a_subject_without_the_form_is_refused(subject: str, why: str) -> None:
    reason = problem(subject)
    assert reason is not None and why in reason


def test_every_commit_since_the_rule_has_the_form() -> None:
    known = subprocess.run(["git", "cat-file", "-e", f"{FIRST_CHECKED_AFTER}^{{commit}}"], cwd=ROOT, check=False)
    assert known.returncode == 0, f"{FIRST_CHECKED_AFTER} is not in this clone's history (a shallow clone?)"
    bad = [f"{sha} {subject!r}: {why}" for sha, subject in subjects_since(ROOT) if (why := problem(subject))]
    assert not bad, "commit subjects without the form:\n" + "\n".join(bad)
