"""Runs nox sessions in parallel lanes: what a bare ./noxw (and so CI) does.

    ./noxw                        every default session, one lane per CPU plus two
    ./noxw --lanes 3              three lanes
    ./noxw --lanes 2 -s a b c     only these sessions, in lanes
    ./noxw --lanes 1              the old serial run: plain nox, nothing of this module
    NOXW_LANES=1 ./noxw           the same, from the environment

Each session is its own `nox -s NAME` process (with every other nox argument and the
arguments after `--` passed on), its output captured to `<logdir>/NAME.log` and printed
whole, between delimiters, as it finishes. The run ends with a table of every session's
result and seconds in the default order, the full log of every failed session once more,
and exit status 1 if any failed.

Each session declares its lane facts beside its definition (noxsessions/_lane_facts.py).
Sessions that write the same files never run at the same time: each holds its locks while
it runs, and a session waits until none of its locks is held. A session counts for its
size in lanes (one unless declared): the conformance matrix runs many runners at once and
mostly waits on workers, restarts and time-outs, so it takes two lanes and admits lighter
partners beside it. Among the sessions that may start, the longest (by its weight, the
seconds it took in a fresh clone's run, or its lock mates' together) goes first, so the
long ones overlap instead of ending up alone at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script by ./noxw: the package lives in the repository's root.
sys.path.insert(0, str(ROOT))

from noxsessions import _registry  # noqa: E402
from noxsessions._lane_facts import LaneFacts, read_weights  # noqa: E402

# Sessions the summary names as the slowest.
SLOWEST = 5


@dataclass(frozen=True)
class Outcome:
    name: str
    ok: bool
    seconds: float
    log: Path
    # CPU seconds (user + system) of the session's process tree: every descendant that was
    # waited for by its parent counts, as the kernel adds a reaped child's time to its parent.
    cpu: float = 0.0


@dataclass
class Schedule:
    """Which session may start next, given what runs now (no processes, no clocks)."""

    pending: list[str]
    facts: LaneFacts
    running: set[str] = field(default_factory=set)

    @staticmethod
    def order(names: Sequence[str], facts: LaneFacts) -> list[str]:
        """Longest first, where a session that shares a lock with others counts as long as
        its longest group of ``names``: lock mates run one after another, so a group of
        short sessions must start early (the four TypeScript build/ sessions, 160 s end to
        end, otherwise came last); within a group, its longest session first."""

        def span(name: str) -> float:
            groups = [holders & set(names) for holders in facts.locks.values() if name in holders]
            return max([facts.weight(name), *(sum(map(facts.weight, group)) for group in groups)])

        return sorted(names, key=lambda n: (-span(n), -facts.weight(n)))

    def lanes_in_use(self) -> int:
        return sum(self.facts.size(r) for r in self.running)

    def can_start(self, name: str, lanes: int) -> bool:
        if self.running and self.lanes_in_use() + self.facts.size(name) > lanes:
            return False
        held = set().union(*(self.facts.locks_of(r) for r in self.running))
        return not (self.facts.locks_of(name) & held)

    def next(self, lanes: int) -> str | None:
        """The next session to start now, removed from pending, or None."""
        for name in self.pending:
            if self.can_start(name, lanes):
                self.pending.remove(name)
                self.running.add(name)
                return name
        return None

    def finished(self, name: str) -> None:
        self.running.discard(name)


Runner = Callable[[str], Outcome]


def run_lanes(
    names: Sequence[str], lanes: int, run_one: Runner, report: Callable[[Outcome], None], facts: LaneFacts
) -> list[Outcome]:
    """Runs every session of ``names`` through ``run_one``, at most ``lanes`` at once."""
    if lanes < 1:
        raise ValueError(f"lanes must be at least 1, not {lanes}")
    schedule = Schedule(Schedule.order(names, facts), facts)
    done: queue.Queue[Outcome] = queue.Queue()
    outcomes: list[Outcome] = []

    def work(name: str) -> None:
        try:
            done.put(run_one(name))
        except BaseException as exc:  # a broken runner still frees the lane, as a failure
            done.put(Outcome(name, False, 0.0, Path(os.devnull)))
            raise exc

    while schedule.pending or schedule.running:
        while (name := schedule.next(lanes)) is not None:
            threading.Thread(target=work, args=(name,), daemon=True).start()
        if not schedule.running:  # nothing runs and nothing can start: a lock cycle cannot happen
            raise RuntimeError(f"sessions that can never start: {schedule.pending}")
        outcome = done.get()
        schedule.finished(outcome.name)
        outcomes.append(outcome)
        report(outcome)
    order = {n: i for i, n in enumerate(names)}
    return sorted(outcomes, key=lambda o: order[o.name])


class NoxRunner:
    """Runs one session as `nox ... -s NAME -- POSARGS`, its output into a log file."""

    def __init__(self, nox: Sequence[str], options: Sequence[str], posargs: Sequence[str], logdir: Path):
        self.nox, self.options, self.posargs, self.logdir = list(nox), list(options), list(posargs), logdir
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.lock = threading.Lock()
        self.began = time.monotonic()  # the run's start, for the offsets in "start" lines

    def __call__(self, name: str) -> Outcome:
        log = self.logdir / f"{name}.log"
        command = [*self.nox, *self.options, "-s", name, *(["--", *self.posargs] if self.posargs else [])]
        started = time.monotonic()
        # One write per line: sessions start from several threads.
        sys.stdout.write(f"noxw lanes: start {name} at +{started - self.began:.0f} s\n")
        sys.stdout.flush()
        with open(log, "wb") as out:
            # A session group of its own, so an interrupted run can stop it and its children.
            process = subprocess.Popen(
                command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            with self.lock:
                self.processes[name] = process
            code, cpu = wait_with_cpu(process)
            with self.lock:
                del self.processes[name]
        return Outcome(name, code == 0, time.monotonic() - started, log, cpu)

    def stop_all(self) -> None:
        with self.lock:
            for process in self.processes.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)


def wait_with_cpu(process: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Waits for the process; returns its exit status and the CPU seconds of its tree."""
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_utime + usage.ru_stime


def print_log(outcome: Outcome, *, out=sys.stdout) -> None:  # type: ignore[no-untyped-def]
    verdict = "ok" if outcome.ok else "FAILED"
    out.write(
        f"\n===== {outcome.name}: {verdict} in {outcome.seconds:.1f} s, {outcome.cpu:.1f} s CPU ({outcome.log}) =====\n"
    )
    try:
        text = outcome.log.read_text(errors="replace")
    except OSError as exc:
        text = f"(no log: {exc})\n"
    out.write(text if text.endswith("\n") or not text else text + "\n")
    out.write(f"===== end of {outcome.name} =====\n")
    out.flush()


def summary(outcomes: Sequence[Outcome], wall: float, lanes: int, *, out=sys.stdout) -> int:  # type: ignore[no-untyped-def]
    """Prints the table and every failed log again; returns the exit status."""
    failed = [o for o in outcomes if not o.ok]
    for outcome in failed:
        out.write(f"\n!!!!! {outcome.name} FAILED: its full log again !!!!!")
        print_log(outcome, out=out)
    width = max([len(o.name) for o in outcomes] + [7])
    out.write(f"\n{'session':<{width}}  result  seconds  cpu-s\n")
    for o in outcomes:
        out.write(f"{o.name:<{width}}  {'ok' if o.ok else 'FAILED':<6}  {o.seconds:7.1f}  {o.cpu:5.0f}\n")
    busy = sum(o.seconds for o in outcomes)
    cpu = sum(o.cpu for o in outcomes)
    slowest = sorted(outcomes, key=lambda o: -o.seconds)[:SLOWEST]
    out.write(f"slowest: {', '.join(f'{o.name} {o.seconds:.0f} s ({o.cpu:.0f} s CPU)' for o in slowest)}\n")
    out.write(
        f"{len(outcomes)} sessions in {wall:.1f} s wall on {lanes} lanes ({busy:.1f} s of sessions, "
        f"{cpu:.1f} s of CPU on {os.cpu_count()} CPUs); "
        f"{len(failed)} failed{': ' + ', '.join(o.name for o in failed) if failed else ''}\n"
    )
    out.flush()
    return 1 if failed else 0


def lane_facts() -> LaneFacts:
    """Every registered session's declared lane facts, and the measured weights."""
    return LaneFacts.of(_registry.sessions(), read_weights())


def split_arguments(argv: Sequence[str]) -> tuple[int, list[str] | None, list[str], list[str]]:
    """(lanes, sessions or None for the default list, other nox options, posargs)."""
    argv = list(argv)
    posargs: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, posargs = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--lanes", type=int, default=None)
    parser.add_argument("-s", "-e", "--session", "--sessions", nargs="+", dest="sessions", action="extend")
    known, options = parser.parse_known_args(argv)
    lanes = known.lanes or int(os.environ.get("NOXW_LANES") or 0) or default_lanes()
    return lanes, known.sessions, options, posargs


def default_lanes() -> int:
    """One lane per CPU and two more: the sessions wait on worker processes, restarts,
    time-outs and the network, so one lane per CPU would leave CPU time unused (a fresh
    clone's run on 2 CPUs and 3 lanes kept 1.4 of them busy on average, with its Python
    bytecode cached). One CPU gets one lane."""
    cpus = len(os.sched_getaffinity(0))
    return cpus + 2 if cpus > 1 else 1


def main(argv: Sequence[str], nox: Sequence[str]) -> int:
    lanes, sessions, options, posargs = split_arguments(argv)
    names = sessions or _registry.default_sessions()
    logdir = Path(tempfile.mkdtemp(prefix="noxw-lanes-"))
    runner = NoxRunner(nox, options, posargs, logdir)
    print(f"noxw lanes: {len(names)} sessions on {lanes} lanes; logs in {logdir}", flush=True)
    started = time.monotonic()

    def stop(signum: int, _frame: object) -> None:
        runner.stop_all()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        outcomes = run_lanes(names, lanes, runner, print_log, lane_facts())
    except KeyboardInterrupt:
        runner.stop_all()
        return 130
    return summary(outcomes, time.monotonic() - started, lanes)


if __name__ == "__main__":
    # ./noxw calls this with the nox executable first, then its own arguments.
    sys.exit(main(sys.argv[2:], [sys.argv[1]]))
