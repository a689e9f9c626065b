"""What one GetRun poll costs the worker, in worker CPU time (run by `./noxw -s bench_poll_cost`).

A client polling a run while it is produced takes the producer's event loop for
as long as the worker spends on each poll, so that cost is what the polled /
unpolled production ratio of ``bench_worker`` is made of. Wall-clock ratios on
this shared machine swing with everyone else's disk writes; CPU time charged to
the worker process (from ``/proc``) barely does. Each worker serves a finished
4,095-event run; blocks of GetRun calls alternate with blocks of GetServerInfo
(the cheapest authenticated call: the RPC stack's own cost) and, with
``--before REV``, with the same blocks against the worker of that git revision
(its ``conformance/src`` exported to a temporary folder), the order swapped
every round. ``--loops`` compares this tree's worker on uvloop and on
asyncio's loop the same way (``--event-loop`` picks one loop for this tree's
worker). ``--spacing-ms 10`` pauses between calls as a poller does, and
``--spacings`` compares that with calls back to back in the same rounds: a call
that wakes an idle worker costs it clearly more CPU than one of a back-to-back
burst (cold caches, the wake-up itself), and that is the cost a polled
production pays. Prints medians with their min-max spread, and the ratio of
the two sides taken round by round. Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import ROOMY, Client, Worker, pb, script

ROOT = Path(__file__).resolve().parents[3]


def cpu_seconds(pid: int) -> float:
    """CPU time the process's threads have run, to the nanosecond where Linux says so.

    ``/proc/PID/task/*/schedstat`` counts in nanoseconds; ``/proc/PID/stat``
    only in clock ticks (10 ms), a few per cent of a block of calls.
    """
    try:
        return sum(int((task / "schedstat").read_text().split()[0])
                   for task in Path(f"/proc/{pid}/task").iterdir()) / 1e9
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _export(revision: str, into: Path) -> Path:
    """The worker sources of ``revision``, unpacked under ``into``."""
    archive = into / "src.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", revision, "conformance/src"],
                       stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "conformance" / "src"


def _start(root: Path, source: Path | None,
           extra: tuple[str, ...] = ()) -> tuple[Worker, Client, str]:
    """A worker (of ``source``, or the installed one) holding a finished 4,095-event run."""
    root.mkdir(mode=0o700)
    if source is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = str(source)
    worker = Worker(root, tuple(a for item in ROOMY for a in ("--limit", item)) + extra)
    worker.public.mkdir(mode=0o700)
    worker.enroll("bench1")
    worker.start()
    client = worker.client("bench1")
    run_id = client.create("produced", script("repeat 4093 say .")).run.run_id
    client.watch(run_id, after=4094, timeout=600)
    client.get(run_id)
    return worker, client, run_id


def _print_ratios(blocks: dict[tuple[str, str], list[float]], names: list[str]) -> None:
    """Each other side over the first, per method, from the blocks of the same round."""
    first = names[0]
    methods = sorted({method for _, method in blocks})
    for other in names[1:]:
        for method in methods:
            ratios = [a / b for a, b in zip(blocks[(first, method)], blocks[(other, method)],
                                            strict=True)]
            print(f"{first} / {other}: worker CPU per {method}, ratio median "
                  f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}, "
                  f"{len(ratios)} alternating rounds)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="git revision whose worker to compare with")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=400, help="calls per block")
    parser.add_argument("--spacing-ms", type=float, default=0.0,
                        help="pause between calls (10 imitates bench_worker's poller, whose "
                             "calls each wake an idle worker and cost it more than calls "
                             "sent back to back)")
    parser.add_argument("--event-loop", choices=("auto", "uvloop", "asyncio"),
                        help="event loop of this tree's worker (default: the worker's default)")
    parser.add_argument("--loops", action="store_true",
                        help="this tree's worker on uvloop and on asyncio, alternating")
    parser.add_argument("--spacings", action="store_true",
                        help="this tree's calls back to back and --spacing-ms (default 10) "
                             "apart, alternating (two workers)")
    args = parser.parse_args()
    if args.spacings and not args.spacing_ms:
        args.spacing_ms = 10.0
    pause = args.spacing_ms / 1000
    if not args.spacings:
        print(f"calls {'back to back' if not pause else f'{args.spacing_ms:g} ms apart'}")
    print("load average at start (1, 5, 15 min): "
          + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        base.chmod(0o700)
        # Each side: the worker's sources (None: the installed one), its arguments, and
        # the pause between calls.
        sides: dict[str, tuple[Path | None, tuple[str, ...], float]] = {}
        if args.loops:
            for loop in ("uvloop", "asyncio"):
                sides[f"this tree on {loop}"] = (None, ("--event-loop", loop), pause)
        elif args.spacings:
            sides["this tree, calls back to back"] = (None, (), 0.0)
            sides[f"this tree, calls {args.spacing_ms:g} ms apart"] = (None, (), pause)
        elif args.event_loop:
            sides[f"this tree on {args.event_loop}"] = (None, ("--event-loop", args.event_loop),
                                                        pause)
        else:
            sides["this tree"] = (None, (), pause)
        if args.before:
            sides[f"before ({args.before})"] = (_export(args.before, base), (), pause)
        workers = {}
        try:
            for n, (name, (source, extra, _)) in enumerate(sides.items()):
                workers[name] = _start(base / f"w{n}", source, extra)
            blocks: dict[tuple[str, str], list[float]] = {}
            for i in range(args.rounds):
                names = list(workers) if i % 2 == 0 else list(reversed(workers))
                for name in names:
                    worker, client, run_id = workers[name]
                    assert worker.proc is not None
                    calls: dict[str, Callable[[], object]] = {
                        "GetRun": lambda c=client, r=run_id: c.get(r),
                        "GetServerInfo": lambda c=client: c.system.GetServerInfo(
                            pb.sys.GetServerInfoRequest(), metadata=c.md, timeout=10),
                    }
                    for method, call in calls.items():
                        before = cpu_seconds(worker.proc.pid)
                        gap = sides[name][2]
                        for _ in range(args.calls):
                            call()
                            if gap:
                                time.sleep(gap)
                        spent = (cpu_seconds(worker.proc.pid) - before) / args.calls * 1000
                        blocks.setdefault((name, method), []).append(spent)
            for (name, method), ms in blocks.items():
                print(f"{name}: worker CPU per {method} median {statistics.median(ms):.3f} ms "
                      f"(min {min(ms):.3f}, max {max(ms):.3f}, {len(ms)} alternating blocks of "
                      f"{args.calls} calls)")
            _print_ratios(blocks, list(workers))
        finally:
            for worker, _, _ in workers.values():
                worker.stop()
    print("load average at end (1, 5, 15 min): "
          + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
