"""A benchmark of the CI command itself (issue 12 item 5), not in the default run.

    bench_ci   runs a fixed subset of the default sessions twice per round, each time with
               fresh nox envdirs and a fresh wheel cache:
                 baseline  virtualenv + pip (`-db virtualenv`), every session building the
                           repository's packages from their folders, conformance columns
                           one after another (`--jobs 1`)
                 today     nox's default backend (uv), the shared per-content wheels of the
                           repository's packages, conformance columns in parallel
               and prints each wall time split into set-up (venv creation, installs, wheel
               builds, `npm ci`) and the rest, read from nox's timestamped log, plus the
               today/baseline ratio per round, its median and min-max spread. Rounds
               alternate which configuration goes first.

    ./noxw -s bench_ci                                 # one round
    ./noxw -s bench_ci -- --rounds 3                   # three alternating rounds
    ./noxw -s bench_ci -- --sessions docs_check conformance_lint

Download caches (uv, pip, npm, Go) stay warm for both configurations, as on a developer's
machine or a CI runner with a cache; node_modules is shared, so `npm ci` is skipped by both.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).resolve().parent.parent

# The subset: every kind of Python set-up the suite has (pinned requirement files, the SDK and
# the worker package, built wheels for twine) and the conformance matrix, which is a third of
# the suite's test time; left out are the sessions whose time is all test or all Go/Node
# (go_tests, typescript_*, worker_fuzz, durability_tests, python_sdk_tox), which both
# configurations run the same way.
SUBSET = ["compile_python", "docs_check", "worker_lint", "python_sdk_lint", "conformance_lint", "conformance"]
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "baseline": {
        "nox": ["-db", "virtualenv"],
        "env": {"COLOSSUS_BUILD_IN_SESSION": "1"},
        "jobs": ["--jobs", "1"],
    },
    "today": {"nox": [], "env": {}, "jobs": []},
}
LINE = re.compile(r"^nox > \[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (.*)$")
SETUP = re.compile(
    r"^(Running session |Creating virtual environment|Re-using existing virtual environment)"
    r"|\bpip install\b|\bnpm ci\b|: (building its wheel once|reusing \S+\.whl)|ensure_tools"
)
END = re.compile(r"^Session \S+ (was successful|failed|was skipped)")


@dataclass
class Timing:
    wall: float
    setup: float
    failed: list[str]

    @property
    def rest(self) -> float:
        return self.wall - self.setup


def split_log(text: str) -> float:
    """Seconds spent in set-up steps: each timestamped nox line lasts until the next one."""
    matches = [m for m in map(LINE.match, text.splitlines()) if m]
    stamped = [(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f"), m[2]) for m in matches]
    setup = 0.0
    for (at, message), (until, _next) in itertools.pairwise(stamped):
        if not END.search(message) and SETUP.search(message):
            setup += (until - at).total_seconds()
    return setup


def measure(session: nox.Session, name: str, sessions: list[str], work: Path) -> Timing:
    """One configuration over the subset, in fresh envdirs; the conformance session gets its
    own nox invocation so that only it receives the runner's `--jobs`."""
    config = CONFIGURATIONS[name]
    env = {**os.environ, "COLOSSUS_WHEEL_CACHE": str(work / "wheels"), **config["env"]}
    base = [str(ROOT / "noxw"), "--no-color", "-ts", "--envdir", str(work / "envs"), *config["nox"]]
    others = [s for s in sessions if s != "conformance"]
    commands = [[*base, "-s", *others]] if others else []
    if "conformance" in sessions:
        runner = ["--results-dir", str(work / "results"), *config["jobs"]]
        commands.append([*base, "-s", "conformance", "--", *runner])
    log_path = work / "nox.log"
    failed: list[str] = []
    started = time.monotonic()
    with open(log_path, "w") as log:
        for command in commands:
            done = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            if done.returncode != 0:
                # A failing case still ran to the end, so the time is kept; the verdict is flagged.
                failed.append(" ".join(command[5:]))
    wall = time.monotonic() - started
    timing = Timing(wall, split_log(log_path.read_text()), failed)
    session.log(
        f"{name:<8} {timing.wall:6.1f} s  (set-up {timing.setup:5.1f} s, rest {timing.rest:5.1f} s)"
        f"  log {log_path}"
    )
    for what in failed:
        session.warn(f"{name}: FAILED (time kept, verdict flagged): {what}")
    return timing


@nox.session(venv_backend="none")
def bench_ci(session: nox.Session) -> None:
    """Prints the wall time of a fixed subset of the CI, baseline configuration vs today's."""
    parser = argparse.ArgumentParser(prog="bench_ci")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sessions", nargs="+", default=SUBSET)
    args = parser.parse_args(session.posargs)
    session.log(f"sessions: {' '.join(args.sessions)}; {args.rounds} round(s), order alternating")
    results: dict[str, list[Timing]] = {"baseline": [], "today": []}
    # Logs and conformance results are kept for a look afterwards; the envdirs are not.
    tmp = Path(tempfile.mkdtemp(prefix="bench-ci-"))
    for round_no in range(args.rounds):
        order = ["baseline", "today"] if round_no % 2 == 0 else ["today", "baseline"]
        for name in order:
            work = tmp / f"round{round_no + 1}-{name}"
            work.mkdir()
            results[name].append(measure(session, name, args.sessions, work))
            for scratch in ("envs", "wheels"):
                shutil.rmtree(work / scratch, ignore_errors=True)
    _report(session, results)


def _report(session: nox.Session, results: dict[str, list[Timing]]) -> None:
    def spread(values: list[float]) -> str:
        return f"median {statistics.median(values):6.1f}  (min {min(values):.1f}, max {max(values):.1f})"

    for name, timings in results.items():
        session.log(f"{name:<8} wall {spread([t.wall for t in timings])}")
        session.log(f"{'':<8} setup {spread([t.setup for t in timings])}")
        session.log(f"{'':<8} rest  {spread([t.rest for t in timings])}")

    flagged = [name for name, timings in results.items() if any(t.failed for t in timings)]
    if flagged:
        session.warn(f"some sessions failed in: {', '.join(flagged)} (see the warnings above)")

    def ratio(values: list[float]) -> str:
        return f"median {statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"

    pairs = list(zip(results["today"], results["baseline"], strict=True))
    session.log(f"today / baseline, wall:   {ratio([t.wall / b.wall for t, b in pairs])}")
    if all(b.setup for _t, b in pairs):
        session.log(f"today / baseline, set-up: {ratio([t.setup / b.setup for t, b in pairs])}")
