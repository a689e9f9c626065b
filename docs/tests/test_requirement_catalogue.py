"""docs/requirements.md must explain every requirement ID the repository cites, and only those.

The catalogue is what lets a reader decode `C4` or `W13` without the product specification, so it
has to move with the code: a new citation without an entry, an entry nobody cites, a path that no
longer exists or a case pattern that proves nothing each fail here.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "docs" / "requirements.md"

# A citation is the ID as a word of its own: `C4`, `[S1, W15]`, `W7:`; never part of a longer token.
CITATION = re.compile(r"(?<![A-Za-z0-9_./-])([BCWS][1-9][0-9]?)(?![A-Za-z0-9_])")
ENTRY = re.compile(r"^### ([BCWS][1-9][0-9]?): ", re.MULTILINE)
BACKTICKED = re.compile(r"`([^`]+)`")
# A backticked token starting with one of these is a repository path that must exist.
REPOSITORY_FOLDERS = {"api", "conformance", "crates", "docs", "noxsessions", "sdk"}

# Generated code, lock files and binary-ish data cite nothing; the catalogue does not cite itself.
NOT_CITING = (
    "docs/requirements.md",
    "*/_gen/*",
    "sdk/go/gen/*",
    "sdk/typescript/src/gen/*",
    "sdk/python/src/colossus_agent_client/api/*",
    "*package-lock.json",
    "*go.sum",
    "*.pem",
)


def tracked_files() -> Iterator[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in listed:
        if name and not any(fnmatch.fnmatch(name, p) for p in NOT_CITING):
            path = ROOT / name
            if path.is_file():
                yield path


def citations() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for match in CITATION.finditer(text):
            found.setdefault(match.group(1), set()).add(str(path.relative_to(ROOT)))
    return found


def entries() -> dict[str, str]:
    text = CATALOGUE.read_text(encoding="utf-8")
    heads = list(ENTRY.finditer(text))
    return {
        m.group(1): text[m.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        for i, m in enumerate(heads)
    }


def cases_by_requirement() -> dict[str, list[str]]:
    by_id: dict[str, list[str]] = {}
    for group in sorted((ROOT / "conformance" / "cases").glob("*.yaml")):
        for case in yaml.safe_load(group.read_text(encoding="utf-8"))["cases"]:
            for requirement in case.get("requirements", []):
                by_id.setdefault(requirement, []).append(case["id"])
    return by_id


def test_every_cited_id_has_an_entry() -> None:
    missing = {i: sorted(where)[:3] for i, where in citations().items() if i not in entries()}
    assert not missing, f"cited but not explained in docs/requirements.md: {missing}"


def test_every_entry_is_cited_somewhere() -> None:
    unused = sorted(set(entries()) - set(citations()))
    assert not unused, f"explained in docs/requirements.md but cited nowhere: {unused}"


def test_entries_are_unique() -> None:
    ids = ENTRY.findall(CATALOGUE.read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)), "an ID has two entries"


@pytest.mark.parametrize("requirement", sorted(entries()))
def test_listed_paths_exist_and_case_patterns_prove_the_entry(requirement: str) -> None:
    by_id = cases_by_requirement()
    groups = {c.split(".")[0] for ids in by_id.values() for c in ids}
    cases = by_id.get(requirement, [])
    for token in BACKTICKED.findall(entries()[requirement]):
        if token.split("/")[0] in REPOSITORY_FOLDERS:
            assert list(ROOT.glob(token.rstrip("/"))), f"{requirement}: no such path {token}"
        elif re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9*-]+)+", token) and token.split(".")[0] in groups:
            hits = [c for c in cases if fnmatch.fnmatch(c, token)]
            assert hits, f"{requirement}: no case matching {token} cites {requirement}"


# --- server cases (W*) ------------------------------------------------------------------------

SERVER_CASES = ROOT / "conformance/src/colossus_conformance/server/cases"
SERVER_LINE = re.compile(r"^- Server cases: (.+?)(?=^- |^\n|\Z)", re.MULTILINE | re.DOTALL)
NOT_OBSERVABLE = "none, not observable by a client: "


def server_cases_by_requirement() -> dict[str, list[str]]:
    """Requirement -> server case IDs, read from the `@case("id", [IDs], ...)` decorators without
    importing the runner (whose dependencies this session does not install)."""
    by_id: dict[str, list[str]] = {}
    for module in sorted(SERVER_CASES.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "case" and len(node.args) >= 2):
                continue
            case_id, requirements = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[1])
            for requirement in requirements:
                by_id.setdefault(requirement, []).append(f"server.{case_id}")
    return by_id


def test_server_cases_are_found() -> None:
    assert sum(len(v) for v in server_cases_by_requirement().values()) > 0, "no server case found"


@pytest.mark.parametrize("requirement", sorted(i for i in entries() if i.startswith("W")))
def test_every_worker_requirement_names_its_server_cases(requirement: str) -> None:
    found = SERVER_LINE.findall(entries()[requirement])
    assert len(found) == 1, f"{requirement}: needs exactly one '- Server cases:' line"
    text = " ".join(found[0].split())
    cases = server_cases_by_requirement().get(requirement, [])
    if text.startswith("none"):
        assert text.startswith(NOT_OBSERVABLE) and len(text) > len(NOT_OBSERVABLE) + 20, (
            f"{requirement}: a W* without server cases must say '{NOT_OBSERVABLE}' and why")
        assert not cases, f"{requirement}: marked not observable, yet cited by {cases}"
        return
    patterns = [t for t in BACKTICKED.findall(text) if t.startswith("server.")]
    assert patterns, f"{requirement}: the Server cases line names no `server.*` pattern"
    for pattern in patterns:
        hits = [c for c in cases if fnmatch.fnmatch(c, pattern)]
        assert hits, f"{requirement}: no server case matching {pattern} cites {requirement}"
