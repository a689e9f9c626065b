"""The mutation harness: proves the catalogue notices realistic SDK bugs.

``python -m colossus_conformance.mutation --sdk python`` (normally through
``./noxw -s conformance_mutants -- --sdk python``) reads ``mutants/<sdk>.yaml``,
and for each mutant: copies the SDK's source folder to a scratch folder, applies
the mutant's one text edit there (never in the working tree), runs the list's
build commands once in the copy, then drives every column of the list (each a
conformance client) with the copy in place of the installed SDK. The cases the
mutant names in ``expect`` run first; the rest of the catalogue runs only if
none of them failed. A mutant is killed by the first case that fails.

The format of a list is documented in ``docs/mutants.md``. Results are printed
and written to ``results/mutants.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import catalogue, sdks
from .results import FAIL, NOT_RUN, CaseResult
from .runner import Options, Suite

log = logging.getLogger("colossus_conformance.mutation")

AREAS = (
    "trust",
    "credential",
    "compatibility",
    "watch",
    "idempotency",
    "retries",
    "pagination",
    "capabilities",
    "errors",
    "artifacts",
    "sidecar",
    "limits",
    "validation",
)

# One planted edit; the SDK and worker mutant lists share it.
EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["file", "find", "replace"],
    "additionalProperties": False,
    "properties": {
        "file": {"type": "string"},
        "find": {"type": "string", "minLength": 1},
        "replace": {"type": "string"},
        "occurrence": {"type": "integer", "minimum": 1},
    },
}

LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["sdk", "columns", "source", "mutants"],
    "additionalProperties": False,
    "properties": {
        "sdk": {"type": "string"},
        "columns": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "source": {"type": "string"},
        "include": {"type": "array", "items": {"type": "string"}},
        "ignore": {"type": "array", "items": {"type": "string"}},
        "link": {"type": "array", "items": {"type": "string"}},
        "build": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        "client_env": {"type": "object", "additionalProperties": {"type": "string"}},
        "mutants": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "area", "requirements", "edits", "expect"],
                "additionalProperties": False,
                "properties": {
                    "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
                    "area": {"enum": list(AREAS)},
                    "requirements": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "title": {"type": "string"},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "items": EDIT_SCHEMA,
                    },
                    "columns": {"type": "array", "items": {"type": "string"}},
                    "expect": {"type": "array", "items": {"type": "string"}},
                    "survivor_reason": {"type": "string"},
                },
            },
        },
    },
}


class MutantListError(Exception):
    """The list is malformed or a mutant no longer applies to the source."""


@dataclass(frozen=True)
class Edit:
    """One text replacement in one file of the SDK copy."""

    file: str
    find: str
    replace: str
    occurrence: int | None = None

    def apply(self, root: Path, mutant: str) -> None:
        """Edits the file in ``root``; refuses when ``find`` is absent or ambiguous."""
        path = root / self.file
        if not path.is_file():
            raise MutantListError(f"{mutant}: no file {self.file}")
        text = path.read_text()
        count = text.count(self.find)
        if count == 0:
            raise MutantListError(f"{mutant}: the text to replace no longer occurs in {self.file}")
        if self.occurrence is None:
            if count > 1:
                raise MutantListError(
                    f"{mutant}: the text occurs {count} times in {self.file}; set occurrence"
                )
            start = text.index(self.find)
        else:
            if self.occurrence > count:
                raise MutantListError(f"{mutant}: occurrence {self.occurrence} of {count} in {self.file}")
            start = -1
            for _ in range(self.occurrence):
                start = text.index(self.find, start + 1)
        path.write_text(text[:start] + self.replace + text[start + len(self.find) :])


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    requirements: tuple[str, ...]
    title: str
    edits: tuple[Edit, ...]
    columns: tuple[str, ...]
    expect: tuple[str, ...]
    survivor_reason: str = ""

    def apply(self, root: Path) -> None:
        """Applies every edit, in order, to the copy in ``root``."""
        for edit in self.edits:
            edit.apply(root, self.id)


@dataclass(frozen=True)
class MutantList:
    sdk: str
    columns: tuple[str, ...]
    source: Path
    include: tuple[str, ...]
    ignore: tuple[str, ...]
    link: tuple[str, ...]
    build: tuple[tuple[str, ...], ...]
    client_env: dict[str, str]
    mutants: tuple[Mutant, ...]


def load_list(path: Path, repo_root: Path) -> MutantList:
    data = yaml.safe_load(path.read_text())
    errors = sorted(
        jsonschema.Draft202012Validator(LIST_SCHEMA).iter_errors(data), key=lambda e: list(e.path)
    )
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "<root>"
        raise MutantListError(f"{path.name}: schema violation at {where}: {errors[0].message}")
    columns = tuple(data["columns"])
    mutants: list[Mutant] = []
    seen: set[str] = set()
    for raw in data["mutants"]:
        if raw["id"] in seen:
            raise MutantListError(f"{path.name}: mutant {raw['id']} listed twice")
        seen.add(raw["id"])
        chosen = tuple(raw.get("columns", columns))
        if not set(chosen) <= set(columns):
            raise MutantListError(f"{path.name}: mutant {raw['id']} names a column the list lacks")
        mutants.append(
            Mutant(
                id=raw["id"],
                area=raw["area"],
                requirements=tuple(raw["requirements"]),
                title=raw.get("title", ""),
                edits=tuple(
                    Edit(e["file"], e["find"], e["replace"], e.get("occurrence")) for e in raw["edits"]
                ),
                columns=chosen,
                expect=tuple(raw["expect"]),
                survivor_reason=raw.get("survivor_reason", ""),
            )
        )
    return MutantList(
        sdk=data["sdk"],
        columns=columns,
        source=(repo_root / data["source"]).resolve(),
        include=tuple(data.get("include", [])),
        ignore=tuple(data.get("ignore", [])),
        link=tuple(data.get("link", [])),
        build=tuple(tuple(cmd) for cmd in data.get("build", [])),
        client_env=dict(data.get("client_env", {})),
        mutants=tuple(mutants),
    )


@dataclass
class Outcome:
    """What one mutant did in one column."""

    mutant: Mutant
    column: str
    killed_by: list[str] = field(default_factory=list)
    how: str = ""  # "expected", "catalogue" or "" (survived)
    detail: str = ""
    seconds: float = 0.0
    flaky: list[str] = field(default_factory=list)  # failed once, passed when repeated

    @property
    def killed(self) -> bool:
        return bool(self.killed_by)


def make_copy(mutants: MutantList, scratch: Path, source: Path | None = None) -> Path:
    """A fresh copy of the SDK source: only ``include`` (default: everything), without
    ``ignore``d entries, with ``link``ed ones shared with the original.

    ``source`` (default: the list's source folder) is the snapshot the harness took at
    start, so an SDK edited while the harness runs does not change mutants mid-run.
    """
    origin = source or mutants.source
    copy = scratch / "sdk"
    if copy.exists():
        shutil.rmtree(copy)
    copy.mkdir()
    skipped = set(mutants.ignore) | set(mutants.link)
    names = mutants.include or tuple(sorted(p.name for p in origin.iterdir()))
    for name in names:
        if name in skipped:
            continue
        source = origin / name
        if source.is_dir():
            shutil.copytree(source, copy / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, copy / name)
    for name in mutants.link:
        if (mutants.source / name).exists():
            (copy / name).symlink_to(mutants.source / name)
    return copy


def expand(text: str, copy: Path) -> str:
    return text.replace("{copy}", str(copy)).replace("{python}", sys.executable)


def column_spec(base: sdks.ClientSpec, mutants: MutantList, copy: Path) -> sdks.ClientSpec:
    env = dict(os.environ)
    env.update({k: expand(v, copy) for k, v in mutants.client_env.items()})
    return sdks.ClientSpec(base.sdk, base.folder, base.command, base.build, env)


def is_kill(result: CaseResult) -> bool:
    return result.status in (FAIL, NOT_RUN)


def baseline_failures(
    suite: Suite, specs: dict[str, sdks.ClientSpec], all_cases: list[catalogue.Case]
) -> dict[str, set[str]]:
    """Cases each column fails without any mutant (beyond its known-failure list).

    A case the healthy SDK already fails cannot tell a mutant apart, so it never counts
    as a kill; the report lists these cases.
    """
    all_ids = [c.id for c in all_cases]
    return {
        column: {r.case_id for r in suite.run_sdk(spec, all_ids, only=all_cases).results if is_kill(r)}
        for column, spec in specs.items()
    }


def first_kill(
    suite: Suite,
    spec: sdks.ClientSpec,
    all_ids: list[str],
    cases: list[catalogue.Case],
    stop_at_first: bool,
) -> tuple[list[str], str, list[str]]:
    """Runs ``cases`` until one fails twice in a row; returns (killers, detail, flaky ones).

    A failure is confirmed by running that case once more: a case that fails once
    because the machine was busy (a connect timeout) must not count as a kill.
    """
    remaining = list(cases)
    flaky: list[str] = []
    while remaining:
        stop = is_kill if stop_at_first else None
        verdict = suite.run_sdk(spec, all_ids, only=remaining, stop=stop)
        failed = [r for r in verdict.results if is_kill(r)]
        if not failed:
            return [], "", flaky
        confirmed = []
        for r in failed:
            case = next(c for c in remaining if c.id == r.case_id)
            again = suite.run_sdk(spec, all_ids, only=[case])
            if any(is_kill(x) for x in again.results):
                confirmed.append(r)
            else:
                flaky.append(r.case_id)
        if confirmed:
            detail = "; ".join(confirmed[0].details)[:300] or confirmed[0].reason
            return [r.case_id for r in confirmed], detail, flaky
        ran = {r.case_id for r in verdict.results}
        remaining = [c for c in remaining if c.id not in ran]
    return [], "", flaky


def run_mutant(
    suite: Suite,
    mutant: Mutant,
    specs: dict[str, sdks.ClientSpec],
    all_cases: list[catalogue.Case],
    stop_at_first: bool,
    broken: dict[str, set[str]] | None = None,
) -> list[Outcome]:
    outcomes = []
    all_ids = [c.id for c in all_cases]
    expected = catalogue.select(all_cases, list(mutant.expect))
    # Only the columns selected for this run (--column) have a spec.
    for column in (c for c in mutant.columns if c in specs):
        started = time.monotonic()
        outcome = Outcome(mutant, column)
        usable = [c for c in all_cases if c.id not in (broken or {}).get(column, set())]
        mine = [c for c in expected if c in usable]
        killers, detail, flaky = first_kill(suite, specs[column], all_ids, mine, stop_at_first)
        outcome.how = "expected" if killers else ""
        if not killers:
            rest = [c for c in usable if c not in expected]
            killers, detail, more = first_kill(suite, specs[column], all_ids, rest, True)
            flaky += more
            outcome.how = "catalogue" if killers else ""
        outcome.killed_by, outcome.detail, outcome.flaky = killers, detail, flaky
        outcome.seconds = time.monotonic() - started
        outcomes.append(outcome)
    return outcomes


def report(outcomes: list[Outcome], columns: tuple[str, ...], wall: float) -> tuple[str, dict[str, float]]:
    """The Markdown report and the kill rate per column."""
    rates: dict[str, float] = {}
    lines = ["# Mutation results", ""]
    lines.append("| column | mutants | killed | kill rate |")
    lines.append("|---|---|---|---|")
    for column in columns:
        mine = [o for o in outcomes if o.column == column]
        if not mine:
            continue
        killed = sum(1 for o in mine if o.killed)
        rates[column] = killed / len(mine)
        lines.append(f"| {column} | {len(mine)} | {killed} | {rates[column]:.0%} |")
    lines += ["", f"Wall time {wall:.0f} s.", "", "## Per mutant", ""]
    lines.append("| mutant | area | requirements | column | verdict | killed by | first failure |")
    lines.append("|---|---|---|---|---|---|---|")
    for o in outcomes:
        verdict = f"killed ({o.how})" if o.killed else "**survived**"
        detail = o.detail.replace("|", "/").replace("\n", " ")[:160]
        lines.append(
            f"| {o.mutant.id} | {o.mutant.area} | {', '.join(o.mutant.requirements)} | {o.column} "
            f"| {verdict} | {', '.join(o.killed_by)} | {detail} |"
        )
    flaky = sorted({c for o in outcomes for c in o.flaky})
    if flaky:
        lines += ["", f"Failed once but passed when repeated (not counted as kills): {', '.join(flaky)}."]
    survivors = [o for o in outcomes if not o.killed]
    lines += ["", "## Survivors", ""]
    if not survivors:
        lines.append("None.")
    for o in survivors:
        why = o.mutant.survivor_reason or "UNEXPLAINED: add a case that sees it, or a survivor_reason"
        lines.append(f"- `{o.mutant.id}` ({o.column}, {o.mutant.title or o.mutant.edits[0].file}): {why}")
    areas = sorted({o.mutant.area for o in outcomes})
    lines += ["", f"Areas covered: {', '.join(areas)}.", ""]
    return "\n".join(lines), rates


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m colossus_conformance.mutation", description=__doc__.splitlines()[0]
    )
    p.add_argument("--suite-dir", type=Path, required=True)
    p.add_argument("--sdk", required=True, help="the mutant list to run: mutants/<sdk>.yaml")
    p.add_argument("--mutant", action="append", default=[], help="run only these mutant IDs (repeatable)")
    p.add_argument("--column", action="append", default=[], help="run only these columns (repeatable)")
    p.add_argument("--results-dir", type=Path, help="default: <suite>/results")
    p.add_argument("--min-kill-rate", type=float, default=0.9)
    p.add_argument(
        "--all-killers", action="store_true", help="run every expected case, not stop at the first kill"
    )
    p.add_argument("--check", action="store_true", help="only check that every mutant applies, then exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    suite_dir = args.suite_dir.resolve()
    repo_root = suite_dir.parent
    mutants = load_list(suite_dir / "mutants" / f"{args.sdk}.yaml", repo_root)
    chosen = [m for m in mutants.mutants if not args.mutant or m.id in args.mutant]
    columns = tuple(c for c in mutants.columns if not args.column or c in args.column)
    # A misspelt ID or column would otherwise run nothing and report no survivors.
    unknown = sorted(set(args.mutant) - {m.id for m in mutants.mutants})
    unknown += sorted(set(args.column) - set(mutants.columns))
    if unknown:
        print(f"not in mutants/{args.sdk}.yaml: {', '.join(unknown)}", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="colossus-mutants-"))
    results_dir = (args.results_dir or suite_dir / "results").resolve()
    try:
        # One snapshot of the SDK for the whole run; every mutant starts from it.
        snapshot = make_copy(mutants, scratch).rename(scratch / "snapshot")
        for m in chosen:  # every mutant must still apply before anything runs
            m.apply(make_copy(mutants, scratch, snapshot))
        print(f"{len(chosen)} mutants apply to {mutants.source}")
        if args.check:
            return 0
        clients = sdks.discover(suite_dir / "clients")
        missing = [c for c in columns if c not in clients]
        if missing:
            print(f"no conformance client for column(s) {', '.join(missing)}", file=sys.stderr)
            return 2
        all_cases = catalogue.load_catalogue(suite_dir / "cases")
        options = Options(
            results_dir=scratch / "results",
            known_failures_dir=suite_dir / "known_failures",
            scratch=scratch,
        )
        suite = Suite(all_cases, options)
        outcomes: list[Outcome] = []
        started = time.monotonic()
        try:
            for column in columns:
                sdks.build(clients[column])
            # The baseline runs an unmutated copy built like any mutant: run in the snapshot
            # itself it would leave build output there (the Go client's rebuilt binary) that
            # every mutant copy inherits, and unbuilt (TypeScript) it fails every case.
            pristine = make_copy(mutants, scratch, snapshot)
            for command in mutants.build:
                subprocess.run([expand(a, pristine) for a in command], cwd=pristine, check=True)
            healthy = {c: column_spec(clients[c], mutants, pristine) for c in columns}
            broken = baseline_failures(suite, healthy, all_cases)
            for column, ids in broken.items():
                print(f"[{column}] healthy SDK fails {len(ids)} case(s), not counted as kills: {sorted(ids)}")
            for m in chosen:
                copy = make_copy(mutants, scratch, snapshot)
                m.apply(copy)
                for command in mutants.build:
                    subprocess.run([expand(a, copy) for a in command], cwd=copy, check=True)
                specs = {c: column_spec(clients[c], mutants, copy) for c in m.columns if c in columns}
                for o in run_mutant(suite, m, specs, all_cases, not args.all_killers, broken):
                    outcomes.append(o)
                    verdict = f"killed by {o.killed_by[0]}" if o.killed else "SURVIVED"
                    print(f"[{o.column}] {m.id:<40} {verdict} ({o.seconds:.1f}s)", flush=True)
        finally:
            suite.close()
        wall = time.monotonic() - started
        text, rates = report(outcomes, columns, wall)
        for column, ids in broken.items():
            if ids:
                text += (
                    f"\nThe healthy SDK already failed in {column} (excluded): {', '.join(sorted(ids))}.\n"
                )
        results_dir.mkdir(parents=True, exist_ok=True)
        (results_dir / "mutants.md").write_text(text)
        print()
        print(text)
        print(f"wrote {results_dir / 'mutants.md'}")
        low = [c for c, r in rates.items() if r < args.min_kill_rate]
        return 1 if low else 0
    except MutantListError as exc:
        print(f"mutant list error: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
