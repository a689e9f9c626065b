"""The worker mutant list: well formed, every mutant applies and names real server cases."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from colossus_conformance.mutation import MutantListError
from colossus_conformance.server.cases import load as load_cases
from colossus_conformance.server.mutation import Outcome, expected_cases, load_list, markdown, plant

SUITE = Path(__file__).resolve().parents[2]
LIST = SUITE / "mutants" / "worker.yaml"


def test_the_list_has_at_least_28_mutants_each_expecting_a_real_case() -> None:
    source, mutants = load_list(LIST)
    assert (SUITE.parent / source).is_dir()
    assert len(mutants) >= 28
    cases = load_cases()
    for mutant in mutants:
        assert expected_cases(mutant, cases), mutant.id


def test_every_mutant_applies_to_a_copy_and_leaves_the_source_alone(tmp_path: Path) -> None:
    source, mutants = load_list(LIST)
    snapshot = tmp_path / "snapshot" / Path(source).name
    shutil.copytree(SUITE.parent / source, snapshot, ignore=shutil.ignore_patterns("__pycache__"))
    for mutant in mutants:
        copy = plant(snapshot, tmp_path / mutant.id, mutant)
        changed = [e.file for e in mutant.edits]
        assert all((copy / snapshot.name / f).read_text() != (snapshot / f).read_text() for f in changed)


def test_a_stale_edit_is_refused(tmp_path: Path) -> None:
    package = tmp_path / "snap" / "pkg"
    package.mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    listing = tmp_path / "list.yaml"
    listing.write_text(
        "worker: w\nsource: pkg\nmutants:\n"
        "  - {id: m, area: watch, requirements: [W8], title: t, expect: [server.watch.*],\n"
        "     edits: [{file: a.py, find: 'y = 2', replace: 'y = 3'}]}\n"
    )
    _, mutants = load_list(listing)
    with pytest.raises(MutantListError, match="no longer occurs"):
        plant(package, tmp_path / "copy", mutants[0])


def test_the_report_names_the_kill_rate_and_every_survivor() -> None:
    _, mutants = load_list(LIST)
    text = markdown([Outcome(mutants[0], "server.watch.x", 1.0), Outcome(mutants[1], "", 1.0)], set(), 2.0)
    assert "1/2 (50%)" in text and "SURVIVED" in text
