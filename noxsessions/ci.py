"""The CI command's own benchmark (issue 12 item 5, not in the default run) and the tests of
the CI's orchestration.

    bench_ci     runs a fixed subset of the default sessions in two configurations per round,
                 each time with fresh nox envdirs and a fresh wheel cache:
                   baseline  the issue's starting point: virtualenv + pip (`-db virtualenv`),
                             every session building the repository's packages from their
                             folders, sessions one after another (`--lanes 1`, plain nox),
                             conformance columns one after another (`--jobs 1`)
                   lanes     today's CI: uv, the shared per-content wheels of the repository's
                             packages, sessions in parallel lanes (./noxw's default: one per
                             CPU plus two), conformance runners in parallel
                             (the runner's default, `columns.default_jobs()`)
                 and prints each wall time, plus the session-seconds spent in set-up (venv
                 creation, installs, wheel builds, `npm ci`) and in the rest, read from nox's
                 timestamped logs (in lanes these add up to more than the wall time), and the
                 machine's load average sampled every 10 s during each. Then the
                 lanes/baseline ratios of the round, their median and min-max spread. Rounds
                 alternate which configuration goes first.
    ci_selftest  pytest of noxsessions/_tests: the lanes of a bare ./noxw, their locks, a
                 failing session's exit status and log, ./noxw's routing of its arguments,
                 the Cargo target folder per clone (an older clone never runs a newer one's build)

    ./noxw -s bench_ci                                 # one round
    ./noxw -s bench_ci -- --rounds 3                   # three alternating rounds
    ./noxw -s bench_ci -- --sessions docs_check conformance_lint
    ./noxw -s bench_ci -- --sessions all               # every default session
    ./noxw -s bench_ci -- --fresh-clone                # what CI does: `bash .ci/run` in a
                                                       # fresh clone of HEAD; prints its wall
                                                       # time, CPU time and slowest sessions,
                                                       # and writes each session's seconds to
                                                       # noxsessions/lane-weights.json

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
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import nox

from noxsessions._lane_facts import WEIGHTS_FILE, write_weights
from noxsessions._lanes import default_lanes

ROOT = Path(__file__).resolve().parent.parent

# The subset: the test-heavy sessions of every toolchain (tox on four interpreters, the
# Python SDK's suite, the durability crash tests, go test -race, the TypeScript suite and
# the conformance matrix, together about three quarters of an idle serial run) and a few
# light ones with each kind of Python set-up (pinned requirement files, the SDK and the
# worker package, built wheels for twine), so that lanes have light partners to fill in
# with, as in the full list.
SUBSET = [
    "docs_check", "compile_python", "python_sdk_lint", "python_sdk_tests", "python_sdk_tox",
    "durability_tests", "go_tests", "typescript_tests", "conformance_lint", "conformance",
]
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "baseline": {
        "nox": ["--lanes", "1", "-db", "virtualenv"],
        # tox without tox-uv: its environments made by virtualenv, installs by pip.
        "env": {"COLOSSUS_BUILD_IN_SESSION": "1", "TOX_OVERRIDE": "testenv.runner=virtualenv"},
        "jobs": ["--jobs", "1"],
    },
    "lanes": {"nox": ["--lanes", str(default_lanes())], "env": {}, "jobs": []},
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
    setup: float  # session-seconds in set-up steps
    busy: float  # session-seconds in sessions (set-up and the rest)
    failed: list[str]
    load: list[float]  # 1-minute load average, sampled every LOAD_EVERY seconds

    @property
    def rest(self) -> float:
        return self.busy - self.setup


LOAD_EVERY = 10.0


class LoadSampler:
    """Samples the 1-minute load average while a configuration runs: the machine may be
    shared, and a ratio measured under a different load than its partner is worth less."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(LOAD_EVERY):
                return

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def describe_load(samples: list[float]) -> str:
    if not samples:
        return "load not sampled"
    return f"load median {statistics.median(samples):.1f} (min {min(samples):.1f}, max {max(samples):.1f})"


def split_log(text: str) -> tuple[float, float]:
    """(set-up, all) session-seconds: each timestamped nox line lasts until the next one of
    its session. Sessions run in lanes are printed whole, one after another, so the pairs
    never cross from one session into another except at an end line, which is skipped."""
    matches = [m for m in map(LINE.match, text.splitlines()) if m]
    stamped = [(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f"), m[2]) for m in matches]
    setup = busy = 0.0
    for (at, message), (until, _next) in itertools.pairwise(stamped):
        if END.search(message):
            continue
        seconds = (until - at).total_seconds()
        busy += seconds
        if SETUP.search(message):
            setup += seconds
    return setup, busy


def measure(session: nox.Session, name: str, sessions: list[str], work: Path) -> Timing:
    """One configuration over the subset, in fresh envdirs and one ./noxw command; the
    conformance runner's arguments come from the environment, so only it gets them."""
    config = CONFIGURATIONS[name]
    runner = ["--results-dir", str(work / "results"), *config["jobs"]]
    env = {
        **os.environ,
        "COLOSSUS_WHEEL_CACHE": str(work / "wheels"),
        "COLOSSUS_CONFORMANCE_ARGS": " ".join(runner),
        **config["env"],
    }
    env.pop("NOXW_LANES", None)
    command = [str(ROOT / "noxw"), "--no-color", "-ts", "--envdir", str(work / "envs"), *config["nox"], "-s", *sessions]
    log_path = work / "nox.log"
    failed: list[str] = []
    started = time.monotonic()
    with open(log_path, "w") as log, LoadSampler() as load:
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    text = log_path.read_text(errors="replace")
    if done.returncode != 0:
        # A failing session or case still ran to the end, so the time is kept; the verdict is flagged.
        failed = sorted(set(re.findall(r"Session (\S+) failed", text))) or ["(see the log)"]
    setup, busy = split_log(text)
    timing = Timing(wall, setup, busy, failed, load.samples)
    session.log(
        f"{name:<8} wall {timing.wall:6.1f} s; session-seconds: set-up {timing.setup:5.1f}, "
        f"rest {timing.rest:5.1f}  (log {log_path}; {describe_load(timing.load)})"
    )
    for what in failed:
        session.warn(f"{name}: FAILED (time kept, verdict flagged): {what}")
    return timing


@nox.session(venv_backend="none")
def bench_ci(session: nox.Session) -> None:
    """Prints the wall time of the CI (a fixed subset by default), baseline vs lanes."""
    parser = argparse.ArgumentParser(prog="bench_ci")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sessions", nargs="+", default=SUBSET, help="names, or `all` for the default list")
    parser.add_argument("--fresh-clone", action="store_true", help="time `bash .ci/run` in a fresh clone of HEAD")
    args = parser.parse_args(session.posargs)
    if args.fresh_clone:
        fresh_clone(session)
        return
    sessions = list(nox.options.sessions or []) if args.sessions == ["all"] else args.sessions
    session.log(f"sessions: {' '.join(sessions)}; {args.rounds} round(s), order alternating")
    results: dict[str, list[Timing]] = {"baseline": [], "lanes": []}
    # Logs and conformance results are kept for a look afterwards; the envdirs are not.
    tmp = Path(tempfile.mkdtemp(prefix="bench-ci-"))
    for round_no in range(args.rounds):
        order = ["baseline", "lanes"] if round_no % 2 == 0 else ["lanes", "baseline"]
        for name in order:
            work = tmp / f"round{round_no + 1}-{name}"
            work.mkdir()
            results[name].append(measure(session, name, sessions, work))
            for scratch in ("envs", "wheels"):
                shutil.rmtree(work / scratch, ignore_errors=True)
    _report(session, results)


def _report(session: nox.Session, results: dict[str, list[Timing]]) -> None:
    def spread(values: list[float]) -> str:
        return f"median {statistics.median(values):6.1f}  (min {min(values):.1f}, max {max(values):.1f})"

    for name, timings in results.items():
        session.log(f"{name:<8} wall            {spread([t.wall for t in timings])}")
        session.log(f"{'':<8} set-up (sess-s) {spread([t.setup for t in timings])}")
        session.log(f"{'':<8} rest   (sess-s) {spread([t.rest for t in timings])}")
        session.log(f"{'':<8} {describe_load([x for t in timings for x in t.load])}")

    flagged = [name for name, timings in results.items() if any(t.failed for t in timings)]
    if flagged:
        session.warn(f"some sessions failed in: {', '.join(flagged)} (see the warnings above)")

    def ratio(values: list[float]) -> str:
        return f"median {statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"

    pairs = list(zip(results["lanes"], results["baseline"], strict=True))
    session.log(f"lanes / baseline, wall:            {ratio([t.wall / b.wall for t, b in pairs])}")
    if all(b.setup and b.rest for _t, b in pairs):
        session.log(f"lanes / baseline, set-up sess-s:   {ratio([t.setup / b.setup for t, b in pairs])}")
        session.log(f"lanes / baseline, rest sess-s:     {ratio([t.rest / b.rest for t, b in pairs])}")


# A row of the lanes' summary table: session, result, seconds, CPU seconds.
ROW = re.compile(r"^(\w+)\s+(ok|FAILED)\s+([\d.]+)\s+([\d.]+)$", re.MULTILINE)


@dataclass(frozen=True)
class SessionTime:
    name: str
    ok: bool
    seconds: float
    cpu: float


def parse_summary(text: str) -> list[SessionTime]:
    """The rows of the summary table a run in lanes ends with."""
    return [SessionTime(m[1], m[2] == "ok", float(m[3]), float(m[4])) for m in ROW.finditer(text)]


def fresh_clone(session: nox.Session) -> None:
    """`bash .ci/run` in a fresh clone of HEAD, with ../shared beside it as on CI; the caches
    outside the clone (~/.cache/colossus-sdks, Go's, npm's, uv's) are used as they are."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-ci-clone-"))
    clone = tmp / "main"
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(clone)], check=True)
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (tmp / "shared").symlink_to(shared)
    log_path = tmp / "ci.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOX", "VIRTUAL_ENV", "COLOSSUS_CONFORMANCE"))}
    session.log(f"bash .ci/run in {clone} (log {log_path})")
    started = time.monotonic()
    with open(log_path, "w") as log, LoadSampler() as load:
        done = subprocess.run(["bash", ".ci/run"], cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    rows = parse_summary(log_path.read_text(errors="replace"))
    cpu = sum(r.cpu for r in rows)
    session.log(
        f"fresh clone: wall {wall:.1f} s, exit {done.returncode}; {len(rows)} sessions, "
        f"{sum(r.seconds for r in rows):.0f} session-seconds, {cpu:.0f} CPU seconds "
        f"({cpu / wall if wall else 0:.2f} CPUs busy on average of {os.cpu_count()}); {describe_load(load.samples)}"
    )
    for row in sorted(rows, key=lambda r: -r.seconds)[:8]:
        session.log(f"  {row.name:<22} {row.seconds:6.1f} s  {row.cpu:5.0f} s CPU  {'ok' if row.ok else 'FAILED'}")
    # The lanes start the longest sessions first: the next run orders by this one's seconds.
    # A failed session's time says little, so it keeps the figure it had.
    measured = {row.name: row.seconds for row in rows if row.ok}
    if measured:
        write_weights(measured, f"seconds per session in a fresh clone's run in lanes (./noxw -s bench_ci -- "
                      f"--fresh-clone, {datetime.now():%Y-%m-%d}, {os.cpu_count()} CPUs, wall {wall:.0f} s)")
        session.log(f"wrote {len(measured)} sessions' seconds to {WEIGHTS_FILE.relative_to(ROOT)}")
    if done.returncode != 0:
        session.error(f"the CI failed (exit {done.returncode}); its log: {log_path}")
    shutil.rmtree(clone, ignore_errors=True)


DEFAULT_SESSIONS = ["ci_selftest"]


@nox.session
def ci_selftest(session: nox.Session) -> None:
    """Tests of the CI's own orchestration: the lanes of a bare ./noxw and their locks, bench_ci,
    the TypeScript build's cache outside the clone and the Cargo target folder per clone."""
    session.install("pytest==9.2.0", "-r", str(ROOT / "noxsessions/requirements.txt"))
    session.run(
        "pytest", "-p", "no:cacheprovider", "-q", str(ROOT / "noxsessions/_tests"), *session.posargs,
        env={"PYTHONPATH": str(ROOT)},
    )
