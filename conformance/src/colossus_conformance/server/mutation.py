"""Worker mutants: proves the server cases notice realistic worker bugs.

``python -m colossus_conformance.server.mutation --worker workers/reference.json`` (normally
``./noxw -s server_conformance_mutants``) reads ``mutants/worker.yaml``. The worker's
package is copied once into a snapshot; each mutant is a copy of the snapshot with its
edits applied (never the working tree), put first on the workers' ``PYTHONPATH``. The
cases the mutant ``expect``s run first; the rest of the catalogue only if none failed.
Cases that already fail against an unmutated copy never count as kills. Prints one line
per mutant and the kill rate; writes ``results/server-mutants.md``.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..mutation import EDIT_SCHEMA, Edit, MutantListError
from ..results import FAIL
from . import suite
from .cases import load as load_cases
from .catalogue import ServerCase
from .manifest import load as load_manifest

AREAS = (
    "watch",
    "idempotency",
    "pagination",
    "auth",
    "trust",
    "interactions",
    "limits",
    "artifacts",
    "durability",
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["worker", "source", "mutants"],
    "additionalProperties": False,
    "properties": {
        "worker": {"type": "string"},
        "source": {"type": "string"},
        "mutants": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "area", "requirements", "title", "edits", "expect"],
                "additionalProperties": False,
                "properties": {
                    "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
                    "area": {"enum": list(AREAS)},
                    "requirements": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^W[0-9]+$"},
                        "minItems": 1,
                    },
                    "title": {"type": "string", "minLength": 1},
                    "edits": {"type": "array", "minItems": 1, "items": EDIT_SCHEMA},
                    "expect": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                    "survivor_reason": {"type": "string"},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class WorkerMutant:
    id: str
    area: str
    requirements: tuple[str, ...]
    title: str
    edits: tuple[Edit, ...]
    expect: tuple[str, ...]
    survivor_reason: str = ""


@dataclass(frozen=True)
class Outcome:
    mutant: WorkerMutant
    killed_by: str  # the first failing case, or "" for a survivor
    seconds: float
    detail: str = ""


def load_list(path: Path) -> tuple[str, list[WorkerMutant]]:
    """(source folder relative to the repository, mutants); refuses a malformed list."""
    data = yaml.safe_load(path.read_text())
    try:
        jsonschema.validate(data, SCHEMA)
    except jsonschema.ValidationError as exc:
        raise MutantListError(f"{path.name}: {exc.message}") from None
    mutants, seen = [], set()
    for raw in data["mutants"]:
        if raw["id"] in seen:
            raise MutantListError(f"{path.name}: mutant {raw['id']} listed twice")
        seen.add(raw["id"])
        edits = tuple(Edit(e["file"], e["find"], e["replace"], e.get("occurrence")) for e in raw["edits"])
        mutants.append(
            WorkerMutant(
                raw["id"],
                raw["area"],
                tuple(raw["requirements"]),
                raw["title"],
                edits,
                tuple(raw["expect"]),
                raw.get("survivor_reason", ""),
            )
        )
    return data["source"], mutants


def expected_cases(mutant: WorkerMutant, cases: list[ServerCase]) -> list[ServerCase]:
    return [c for c in cases if any(fnmatch.fnmatch(c.id, p) for p in mutant.expect)]


def plant(snapshot: Path, into: Path, mutant: WorkerMutant | None) -> Path:
    """A copy of the snapshot package under ``into`` with the mutant's edits; returns ``into``."""
    package = into / snapshot.name
    shutil.copytree(snapshot, package)
    if mutant is not None:
        for edit in mutant.edits:
            edit.apply(package, mutant.id)
    return into


def _failures(manifest: Any, cases: list[ServerCase], options: suite.Options, path: Path) -> dict[str, str]:
    """Runs ``cases`` with ``path`` first on the workers' PYTHONPATH; failing case -> first detail."""
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(path) + (os.pathsep + previous if previous else "")
    try:
        verdict = suite.run(manifest, cases, options)
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous
    failed = {
        r.case_id: (r.details[0] if r.details else r.status) for r in verdict.results if r.status == FAIL
    }
    if verdict.problems:
        failed["(worker)"] = "; ".join(verdict.problems)
    return failed


def run_mutant(
    manifest: Any,
    mutant: WorkerMutant,
    cases: list[ServerCase],
    baseline: set[str],
    snapshot: Path,
    options: suite.Options,
) -> Outcome:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"m-{mutant.id}-", dir=options.scratch) as copy:
        path = plant(snapshot, Path(copy), mutant)
        first = expected_cases(mutant, cases)
        rest = [c for c in cases if c not in first]
        for batch in (first, rest):
            failed = {k: v for k, v in _failures(manifest, batch, options, path).items() if k not in baseline}
            if failed:
                case_id = (
                    next(c.id for c in batch if c.id in failed) if set(failed) - {"(worker)"} else "(worker)"
                )
                return Outcome(mutant, case_id, time.monotonic() - started, failed[case_id])
    return Outcome(mutant, "", time.monotonic() - started)


def markdown(outcomes: list[Outcome], baseline: set[str], seconds: float) -> str:
    killed = [o for o in outcomes if o.killed_by]
    rate = len(killed) / len(outcomes) if outcomes else 0.0
    out = [
        "# Worker mutants",
        "",
        f"Kill rate: **{len(killed)}/{len(outcomes)} ({rate:.0%})** in {seconds:.0f} s.",
        "",
    ]
    if baseline:
        out += [f"Cases failing without any mutant (never counted): {', '.join(sorted(baseline))}.", ""]
    out += ["| mutant | area | requirements | killed by |", "|---|---|---|---|"]
    for o in outcomes:
        verdict = (
            f"`{o.killed_by}`"
            if o.killed_by
            else f"SURVIVED: {o.mutant.survivor_reason or 'no reason given'}"
        )
        out.append(f"| `{o.mutant.id}` | {o.mutant.area} | {', '.join(o.mutant.requirements)} | {verdict} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="colossus_conformance.server.mutation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--suite-dir", type=Path, required=True)
    parser.add_argument(
        "--worker", type=Path, required=True, help="the manifest of the worker the list mutates"
    )
    parser.add_argument("--list", type=Path, help="the mutant list (default: <suite>/mutants/worker.yaml)")
    parser.add_argument("--mutant", action="append", default=[], help="run only these mutants (globs)")
    parser.add_argument("--check", action="store_true", help="only check that every mutant applies")
    parser.add_argument("--h2spec", help="the h2spec binary for server.http2.h2spec")
    parser.add_argument("--min-kill-rate", type=float, default=1.0)
    args = parser.parse_args(argv)
    suite_dir = args.suite_dir.resolve()
    repo = suite_dir.parent
    source, mutants = load_list(args.list or suite_dir / "mutants" / "worker.yaml")
    if args.mutant:
        mutants = [m for m in mutants if any(fnmatch.fnmatch(m.id, p) for p in args.mutant)]
    manifest = load_manifest(args.worker)
    cases = load_cases()
    results_dir = suite_dir / "results"
    (results_dir / "server-logs").mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="colossus-worker-mutants-") as scratch_name:
        scratch = Path(scratch_name)
        snapshot = scratch / "snapshot" / Path(source).name
        shutil.copytree(repo / source, snapshot, ignore=shutil.ignore_patterns("__pycache__"))
        try:
            for mutant in mutants:
                with tempfile.TemporaryDirectory(dir=scratch) as probe:
                    plant(snapshot, Path(probe), mutant)
                    stale = [p for p in mutant.expect if not expected_cases(mutant, cases)]
                    if stale:
                        raise MutantListError(f"{mutant.id}: expect {stale} matches no server case")
        except MutantListError as exc:
            print(f"stale mutant list: {exc}", file=sys.stderr)
            return 2
        if args.check:
            print(f"all {len(mutants)} mutants apply")
            return 0
        options = suite.Options(scratch=scratch, log_dir=results_dir / "server-logs", h2spec=args.h2spec)
        baseline = set(_failures(manifest, cases, options, plant(snapshot, scratch / "baseline", None)))
        if baseline:
            print(f"failing without any mutant (never counted as kills): {', '.join(sorted(baseline))}")
        outcomes = []
        for mutant in mutants:
            outcome = run_mutant(manifest, mutant, cases, baseline, snapshot, options)
            outcomes.append(outcome)
            verdict = (
                f"killed by {outcome.killed_by}: {outcome.detail[:100]}" if outcome.killed_by else "SURVIVED"
            )
            print(f"{mutant.id:<42} {verdict} ({outcome.seconds:.0f}s)", flush=True)
    seconds = time.monotonic() - started
    killed = sum(1 for o in outcomes if o.killed_by)
    rate = killed / len(outcomes) if outcomes else 0.0
    (results_dir / "server-mutants.md").write_text(markdown(outcomes, baseline, seconds))
    print(
        f"worker mutants: {killed}/{len(outcomes)} killed, kill rate {rate:.0%} in {seconds:.0f} s; "
        f"wrote {results_dir / 'server-mutants.md'}"
    )
    for o in outcomes:
        if not o.killed_by:
            print(f"  survivor {o.mutant.id}: {o.mutant.survivor_reason or 'no reason given'}")
    return 0 if rate >= args.min_kill_rate else 1


if __name__ == "__main__":
    sys.exit(main())
