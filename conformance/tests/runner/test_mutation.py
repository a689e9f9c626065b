"""The mutation harness's list format and edits (docs/mutants.md); no worker needed."""

from pathlib import Path

import pytest

from colossus_conformance import mutation

from .conftest import SUITE

LIST = """
sdk: demo
columns: [demo, demo-async]
source: sdk
include: [src]
client_env: {PYTHONPATH: "{copy}/src"}
mutants:
  - id: flip
    area: watch
    requirements: [S1]
    edits:
      - {file: src/core.py, find: "a == b", replace: "a != b"}
    expect: ["gap-failure.*"]
  - id: second-only
    area: errors
    requirements: [S5]
    edits:
      - {file: src/core.py, find: "x = 1", replace: "x = 2", occurrence: 2}
    columns: [demo-async]
    expect: []
    survivor_reason: equivalent
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "sdk" / "src").mkdir(parents=True)
    (tmp_path / "sdk" / "src" / "core.py").write_text("x = 1\nok = a == b\nx = 1\n")
    (tmp_path / "sdk" / "notes.txt").write_text("not copied")
    (tmp_path / "list.yaml").write_text(LIST)
    return tmp_path


def test_list_loads_with_defaults(repo: Path) -> None:
    loaded = mutation.load_list(repo / "list.yaml", repo)
    assert loaded.columns == ("demo", "demo-async")
    flip, second = loaded.mutants
    assert flip.columns == ("demo", "demo-async")
    assert second.columns == ("demo-async",)
    assert second.survivor_reason == "equivalent"


def test_copy_holds_only_included_entries_and_edits_apply_there(repo: Path, tmp_path: Path) -> None:
    loaded = mutation.load_list(repo / "list.yaml", repo)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copy = mutation.make_copy(loaded, scratch)
    assert not (copy / "notes.txt").exists()
    loaded.mutants[1].apply(copy)
    assert (copy / "src" / "core.py").read_text() == "x = 1\nok = a == b\nx = 2\n"
    # The working tree is never touched.
    assert (repo / "sdk" / "src" / "core.py").read_text() == "x = 1\nok = a == b\nx = 1\n"


def test_a_stale_or_ambiguous_edit_is_refused(repo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    (copy / "src").mkdir(parents=True)
    (copy / "src" / "core.py").write_text("x = 1\nx = 1\n")
    with pytest.raises(mutation.MutantListError, match="no longer occurs"):
        mutation.Edit("src/core.py", "a == b", "a != b").apply(copy, "flip")
    with pytest.raises(mutation.MutantListError, match="occurs"):
        mutation.Edit("src/core.py", "x = 1", "x = 2").apply(copy, "dup")


def test_unknown_area_or_column_is_refused(repo: Path) -> None:
    (repo / "list.yaml").write_text(LIST.replace("area: watch", "area: weather"))
    with pytest.raises(mutation.MutantListError, match="schema"):
        mutation.load_list(repo / "list.yaml", repo)
    (repo / "list.yaml").write_text(LIST.replace("columns: [demo-async]", "columns: [go]"))
    with pytest.raises(mutation.MutantListError, match="column"):
        mutation.load_list(repo / "list.yaml", repo)


def test_report_counts_kill_rate_per_column_and_explains_survivors(repo: Path) -> None:
    loaded = mutation.load_list(repo / "list.yaml", repo)
    flip, second = loaded.mutants
    outcomes = [
        mutation.Outcome(flip, "demo", killed_by=["gap-failure.mid-stream"], how="expected"),
        mutation.Outcome(flip, "demo-async", killed_by=["gap-failure.mid-stream"], how="expected"),
        mutation.Outcome(second, "demo-async"),
    ]
    text, rates = mutation.report(outcomes, loaded.columns, 1.0)
    assert rates == {"demo": 1.0, "demo-async": 0.5}
    assert "`second-only` (demo-async" in text and "equivalent" in text


def test_the_python_list_applies_to_the_sdk() -> None:
    loaded = mutation.load_list(SUITE / "mutants" / "python.yaml", SUITE.parent)
    assert len(loaded.mutants) >= 40
    assert {m.area for m in loaded.mutants} >= {
        "trust",
        "watch",
        "idempotency",
        "retries",
        "pagination",
        "capabilities",
        "errors",
        "artifacts",
        "sidecar",
        "limits",
    }


def test_a_mutant_runs_only_in_the_columns_selected(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flip, _ = mutation.load_list(repo / "list.yaml", repo).mutants
    seen: list[object] = []

    def fake_first_kill(suite: object, spec: object, *rest: object) -> tuple[list[str], str, list[str]]:
        seen.append(spec)
        return ["gap-failure.mid-stream"], "", []

    monkeypatch.setattr(mutation, "first_kill", fake_first_kill)
    only_demo = {"demo": object()}
    outcomes = mutation.run_mutant(None, flip, only_demo, [], True)  # type: ignore[arg-type]
    assert [o.column for o in outcomes] == ["demo"]
    assert seen == [only_demo["demo"]]


@pytest.mark.parametrize("selection", [["--mutant", "no-such-mutant"], ["--column", "no-such-column"]])
def test_an_unknown_mutant_or_column_is_an_error_not_an_empty_run(
    selection: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = mutation.main(["--suite-dir", str(SUITE), "--sdk", "python", "--check", *selection])
    assert code == 2
    assert selection[1] in capsys.readouterr().err
