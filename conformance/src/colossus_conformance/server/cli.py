"""``colossus-conformance --worker MANIFEST``: the server catalogue against one worker.

colossus-conformance --worker workers/reference.json                 # every server case
colossus-conformance --worker workers/reference.json --list          # the catalogue
colossus-conformance --worker other.json --run 'server.watch.*' --h2spec /path/to/h2spec
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from .. import report
from ..results import NOT_APPLICABLE, RunVerdict
from . import catalogue, suite
from .cases import load as load_cases
from .manifest import ManifestError, load

W_REQUIREMENTS = [f"W{i}" for i in range(1, 17)]


def main(args: argparse.Namespace, suite_dir: Path) -> int:
    try:
        manifests = [load(Path(path)) for path in args.worker]
    except ManifestError as exc:
        print(f"bad worker manifest: {exc}")
        return 2
    if len({m.name for m in manifests}) != len(manifests):
        print("two manifests name the same worker")
        return 2
    cases = catalogue.select(load_cases(), args.run)
    if args.list:
        print_list(cases)
        return 0
    results_dir = (args.results_dir or suite_dir / "results").resolve()
    log_dir = results_dir / "server-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="colossus-server-") as scratch:
        options = suite.Options(
            scratch=Path(scratch),
            log_dir=log_dir,
            h2spec=args.h2spec,
            on_result=lambda r: print(
                f"[{r.sdk}] {r.status:<7} {r.case_id} ({r.seconds:.1f}s)"
                + (f": {r.details[0]}" if r.details else ""),
                flush=True,
            ),
        )
        verdicts = [suite.run(manifest, cases, options) for manifest in manifests]
    verdict = RunVerdict(
        results=[r for v in verdicts for r in v.results], problems=[p for v in verdicts for p in v.problems]
    )
    wall = time.monotonic() - started
    print()
    print(report.console(verdict, wall))
    write(verdict, wall, results_dir)
    not_applicable = sum(1 for r in verdict.results if r.status == NOT_APPLICABLE)
    names = ", ".join(m.name for m in manifests)
    print(
        f"server conformance of {names}: {not_applicable} case(s) not applicable; wrote "
        f"{results_dir / 'server-matrix.md'} and {results_dir / 'server-junit.xml'}"
    )
    return 0 if verdict.ok else 1


def write(verdict: RunVerdict, wall: float, results_dir: Path) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "server-matrix.md").write_text(report.markdown(verdict, wall, "Server conformance matrix"))
    (results_dir / "server-junit.xml").write_bytes(report.junit(verdict, wall, "server"))


def print_list(cases: list[catalogue.ServerCase]) -> None:
    for c in cases:
        needs = ",".join(c.needs) or "-"
        print(f"{c.id:<50} {','.join(c.requirements):<16} {needs:<14} {c.title}")
    groups = Counter(c.group for c in cases)
    print()
    for group in sorted(groups):
        print(f"  {group:<16} {groups[group]:>3} cases")
    print(f"  {'total':<16} {len(cases):>3} cases")
    cited = Counter(r for c in cases for r in c.requirements)
    print("requirements cited (cases): " + "  ".join(f"{r}:{cited.get(r, 0)}" for r in W_REQUIREMENTS))
