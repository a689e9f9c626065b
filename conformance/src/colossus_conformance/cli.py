"""``colossus-conformance``: run, list or debug the conformance cases.

Examples::

    colossus-conformance                          # every case, every SDK with a client
    colossus-conformance --list                   # the catalogue, with per-group counts
    colossus-conformance --run 'watch-dedup.*' --sdk python
    colossus-conformance --jobs 1                 # SDK columns one after another
    colossus-conformance --jobs 4                 # 4 runners: one per column of a 4-SDK matrix
    colossus-conformance --serve gap-failure.mid-stream --sdk python
    colossus-conformance --worker workers/reference.json  # judge a worker (docs/worker-protocol.md)
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from pathlib import Path

from . import catalogue, columns, report, sdks
from .results import RunVerdict
from .runner import Options

# Every requirement ID of the specification (C1-C8, W1-W16, S1-S8).
SPEC_REQUIREMENTS = (
    [f"C{i}" for i in range(1, 9)] + [f"W{i}" for i in range(1, 17)] + [f"S{i}" for i in range(1, 9)]
)


def find_suite_dir(start: Path) -> Path:
    """The ``conformance`` folder: the one holding ``cases/schema.json``."""
    for folder in [start, *start.parents]:
        for candidate in (folder, folder / "conformance"):
            if (candidate / "cases" / "schema.json").is_file():
                return candidate
    raise SystemExit("cannot find the conformance folder (cases/schema.json); pass --suite-dir")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="colossus-conformance", description=__doc__.splitlines()[0])
    p.add_argument("--suite-dir", type=Path, help="the conformance folder (default: found from the cwd)")
    p.add_argument("--list", action="store_true", help="list the selected cases and exit")
    p.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="PATTERN",
        help="run only cases matching this glob (or ID prefix); repeatable",
    )
    p.add_argument(
        "--sdk",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this SDK's client; repeatable (default: every client found)",
    )
    p.add_argument(
        "--results-dir", type=Path, help="where matrix.md and junit.xml go (default: <suite>/results)"
    )
    p.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every case timeout")
    p.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        default=columns.default_jobs(),
        metavar="N",
        help="run N runners at once, each with its own client, workers and logs; with N at "
        "least twice the number of SDK columns, each column gets N // columns runners sharing "
        "its cases (default: %(default)s here, from the CPUs this process may use; 1 runs the "
        "columns one after another)",
    )
    p.add_argument(
        "--serve",
        metavar="CASE",
        help="serve the worker for one case and print its instruction for a client under a debugger",
    )
    p.add_argument(
        "--worker",
        action="append",
        default=[],
        metavar="MANIFEST",
        help="judge a worker instead of the SDKs: run the server cases against the worker this "
        "manifest describes (docs/worker-protocol.md); repeatable, one matrix column per worker; "
        "--run and --list then select server cases",
    )
    p.add_argument("--h2spec", metavar="PATH", help="the h2spec binary for the server case http2.h2spec")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s", stream=sys.stderr
    )
    suite_dir = (args.suite_dir or find_suite_dir(Path.cwd())).resolve()
    if args.worker:
        from .server.cli import main as server_main

        return server_main(args, suite_dir)
    all_cases = catalogue.load_catalogue(suite_dir / "cases")
    selected = catalogue.select(all_cases, args.run)

    if args.list:
        print_list(selected)
        return 0

    clients = sdks.discover(suite_dir / "clients")
    unknown = [s for s in args.sdk if s not in clients]
    if unknown:
        print(
            f"no conformance client for: {', '.join(unknown)} (have: {', '.join(clients) or 'none'})",
            file=sys.stderr,
        )
        return 2
    chosen = [clients[s] for s in (args.sdk or sorted(clients))]
    results_dir = (args.results_dir or suite_dir / "results").resolve()

    if args.serve:
        from .debug import serve

        matches = [c for c in all_cases if c.id == args.serve]
        if not matches:
            print(f"no case {args.serve!r}", file=sys.stderr)
            return 2
        return serve(matches[0], chosen[0] if chosen else None, results_dir)

    options = Options(
        results_dir=results_dir,
        known_failures_dir=suite_dir / "known_failures",
        timeout_scale=args.timeout_scale,
        on_result=lambda r: print(
            f"[{r.sdk}] {r.status:<7} {r.case_id} ({r.seconds:.1f}s)"
            + (f": {'; '.join(r.details)}" if r.details and r.status == "FAIL" else ""),
            flush=True,
        ),
    )
    started = time.monotonic()
    verdict = run(all_cases, selected, chosen, options, args.jobs)
    wall = time.monotonic() - started
    print()
    print(report.console(verdict, wall))
    report.write(verdict, wall, results_dir)
    print(f"wrote {results_dir / 'matrix.md'} and {results_dir / 'junit.xml'}")
    return 0 if verdict.ok else 1


def run(
    all_cases: list[catalogue.Case],
    selected: list[catalogue.Case],
    clients: list[sdks.ClientSpec],
    options: Options,
    jobs: int = 1,
) -> RunVerdict:
    """Runs ``selected`` for every client, ``jobs`` runners at a time, and merges the verdicts."""
    return columns.run(all_cases, selected, clients, options, jobs)


def print_list(cases: list[catalogue.Case]) -> None:
    for c in cases:
        print(f"{c.id:<58} {c.level:<11} {','.join(c.requirements):<14} {c.title}")
    groups = Counter(c.group for c in cases)
    print()
    for g in sorted(groups):
        print(f"  {g:<20} {groups[g]:>3} cases")
    levels = Counter(c.level for c in cases)
    split = f"{levels['REQUIRED']} REQUIRED, {levels['RECOMMENDED']} RECOMMENDED"
    print(f"  {'total':<20} {len(cases):>3} cases ({split})")
    cited = Counter(r for c in cases for r in c.requirements)
    print()
    print("requirements cited (cases):")
    print("  " + "  ".join(f"{r}:{cited.get(r, 0)}" for r in SPEC_REQUIREMENTS))
    missing = [r for r in SPEC_REQUIREMENTS if r not in cited]
    if missing:
        print(f"  not cited by the selected cases: {', '.join(missing)}")


if __name__ == "__main__":
    sys.exit(main())
