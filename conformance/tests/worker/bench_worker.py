"""Benchmark figures for the reference worker (run by `./noxw -s bench_worker`).

Prints three figures, each measured against a real worker subprocess over TLS
with raw grpcio stubs:

* CreateRun median latency (sequential calls, echo runs);
* WatchRun replay throughput: a finished 4,099-event run streamed from
  sequence 0 to one client, in events per second;
* the worker's resident memory with 64 live watches open.

This is not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import ROOMY, Worker, pb, script

S = pb.runs


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--creates", type=int, default=300)
    parser.add_argument("--replays", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o700)
        limit_args = [a for item in ROOMY for a in ("--limit", item)]
        worker = Worker(root, tuple(limit_args))
        worker.public.mkdir(mode=0o700)
        apps = [f"bench{i}" for i in range(1, 9)]
        for app in apps:
            worker.enroll(app)
        worker.start()
        try:
            c = worker.client("bench1")
            c.create("warm-up", "x")
            samples = []
            for i in range(args.creates):
                start = time.perf_counter()
                c.create(f"create-{i}", "benchmark input")
                samples.append(time.perf_counter() - start)
            samples.sort()
            print(f"CreateRun latency over {args.creates} sequential calls: "
                  f"median {statistics.median(samples) * 1000:.2f} ms, "
                  f"p95 {samples[int(len(samples) * 0.95)] * 1000:.2f} ms")

            run = c.create("big", script("repeat 4093 say .", "ask Stop? | yes")).run
            stream = c.runs.WatchRun(pb.rs.WatchRunRequest(run_id=run.run_id), metadata=c.md)
            for response in stream:
                if response.event.HasField("interaction_requested"):
                    stream.cancel()
                    break
            c.cancel(run.run_id)
            c.watch(run.run_id, after=4098)
            rates = []
            for _ in range(args.replays):
                start = time.perf_counter()
                events = c.watch(run.run_id, timeout=120)
                elapsed = time.perf_counter() - start
                assert len(events) == 4099
                rates.append(len(events) / elapsed)
            print(f"WatchRun replay of a 4,099-event run to one grpcio client: "
                  f"median {statistics.median(rates):,.0f} events/s "
                  f"(best {max(rates):,.0f}, {args.replays} replays)")

            assert worker.proc is not None
            before = _rss_kib(worker.proc.pid)
            streams = []
            for app in apps:
                client = worker.client(app)
                held = client.create("hold", script("sleep forever")).run.run_id
                client.wait_status(held, S.RUN_STATUS_RUNNING)
                for _ in range(8):
                    s = client.runs.WatchRun(pb.rs.WatchRunRequest(run_id=held),
                                             metadata=client.md)
                    next(s)
                    streams.append(s)
            time.sleep(0.5)
            during = _rss_kib(worker.proc.pid)
            print(f"Worker memory with {len(streams)} live watches: RSS {during / 1024:.1f} MiB "
                  f"(before opening them {before / 1024:.1f} MiB)")
            for s in streams:
                s.cancel()
        finally:
            worker.stop()


if __name__ == "__main__":
    main()
