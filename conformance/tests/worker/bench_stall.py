"""How long can one application's costly request delay another application's calls?

Issue 11's stall figure. app1 sends each costly request below over a bare HTTP/2
connection while app2 calls GetServerInfo back to back; a round records app2's
slowest answer while app1's request was in flight, and an idle round (no costly
request) alternates with every costly one on the same worker. Printed per
payload: the median and min-max of the slowest answers, and the stall (slowest
answer minus the idle rounds' median slowest answer). Target: under 100 ms.

    ./noxw -s bench_stall [-- --rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from raw_h2 import RawClient, frame
from test_hostile_input import RUNS, UNKNOWN_FLOOD, string, text_part

from conftest import ROOMY, Worker, pb

MIB = 1 << 20
PAYLOADS = {
    "unknown-field flood (GetRun, 2 MiB)": (RUNS + "GetRun", UNKNOWN_FLOOD),
    "128 parts x 16 KiB (CreateRun, 2 MiB)": (
        RUNS + "CreateRun", string(1, b"k") + text_part("x" * 16_000) * 128),
    "one 2 MiB run_id (GetRun)": (RUNS + "GetRun", string(1, b"r" * (2 * MIB - 16))),
    "2 MiB page token (ListRuns)": (RUNS + "ListRuns", string(3, b"t" * (2 * MIB - 16))),
    "16 unknown fields x 128 KiB (GetRun)": (
        RUNS + "GetRun", string(19, b"\0" * (128 * 1024)) * 15),
}


def _slowest_answer(worker: Worker, raw: RawClient | None, path: str, body: bytes) -> float:
    """app2's slowest GetServerInfo while app1's request is in flight (or for 0.3 s idle)."""
    c = worker.client("app2")
    request = pb.sys.GetServerInfoRequest()
    c.system.GetServerInfo(request, metadata=c.md, timeout=30)  # connection warmed up
    done = threading.Event()
    if raw is None:
        threading.Timer(0.3, done.set).start()
    else:
        def hostile() -> None:
            stream_id = raw.open(path)
            raw.send(stream_id, frame(body))
            raw.wait(stream_id, timeout=300)
            done.set()
        threading.Thread(target=hostile).start()
    slowest = 0.0
    while not done.is_set():
        start = time.perf_counter()
        c.system.GetServerInfo(request, metadata=c.md, timeout=300)
        slowest = max(slowest, time.perf_counter() - start)
    return slowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o700)
        worker = Worker(root, tuple(a for item in ROOMY for a in ("--limit", item)))
        worker.public.mkdir(mode=0o700)
        for app in ("app1", "app2"):
            worker.enroll(app)
        worker.start()
        try:
            idle: list[float] = []
            results: dict[str, list[float]] = {name: [] for name in PAYLOADS}
            for _ in range(args.rounds):
                for name, (path, body) in PAYLOADS.items():
                    idle.append(_slowest_answer(worker, None, "", b""))
                    raw = RawClient(worker.target, worker.pem, worker.bearers["app1"])
                    try:
                        results[name].append(_slowest_answer(worker, raw, path, body))
                    finally:
                        raw.close()
        finally:
            worker.stop()
    base = statistics.median(idle)
    print(f"idle: slowest GetServerInfo median {base * 1e3:.1f} ms "
          f"(min {min(idle) * 1e3:.1f}, max {max(idle) * 1e3:.1f}) over {len(idle)} rounds")
    worst = 0.0
    for name, values in results.items():
        stall = max(0.0, statistics.median(values) - base)
        worst = max(worst, max(values) - base)
        print(f"{name:40s} slowest median {statistics.median(values) * 1e3:7.1f} ms "
              f"(min {min(values) * 1e3:.1f}, max {max(values) * 1e3:.1f}); "
              f"stall {stall * 1e3:.1f} ms")
    print(f"longest stall of another application's GetServerInfo: {worst * 1e3:.1f} ms "
          f"(target < 100 ms)")


if __name__ == "__main__":
    main()
