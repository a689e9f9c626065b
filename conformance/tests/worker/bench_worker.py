"""Benchmark figures for the reference worker (run by `./noxw -s bench_worker`).

Every figure comes from a real worker subprocess over TLS, driven with raw
grpcio stubs. Ratios are measured in one run: the two sides alternate round by
round (so drift on this shared machine hits both), and each line prints the
median of the per-round ratios with their min-max spread, never a best-of.

* GetRun on a 4,099-event run over GetRun on a 10-event run (issue 12: <= 1.5);
* a 4,099-event replay by the worker over the same frames streamed by a bare
  grpclib server on the worker's own TLS listener and write-coalescing
  transport (``bare_replay_server.py``; issue 12: >= 0.85);
* producing a 4,095-event run while another client polls its GetRun every
  10 ms over producing it unpolled (issue 12: <= 1.1);
* CreateRun median latency, and the worker's memory with 64 live watches.

This is not a test: nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import ROOMY, Worker, pb, run_service_pb2_grpc, script

S = pb.runs
HERE = Path(__file__).resolve().parent


def _spread(label: str, ratios: list[float], target: str) -> None:
    print(f"{label}: ratio median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} alternating rounds; "
          f"target {target})")


def _alternate(rounds: int, a: Callable[[], float], b: Callable[[], float]) -> list[float]:
    """Per-round ratios a/b, the order of the two sides swapped every round."""
    ratios = []
    for i in range(rounds):
        if i % 2:
            tb, ta = b(), a()
        else:
            ta, tb = a(), b()
        ratios.append(ta / tb)
    return ratios


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--creates", type=int, default=300)
    parser.add_argument("--replays", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--productions", type=int, default=6)
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

            big = c.create("big", script("repeat 4093 say .", "ask Stop? | yes")).run
            stream = c.runs.WatchRun(pb.rs.WatchRunRequest(run_id=big.run_id), metadata=c.md)
            for response in stream:
                if response.event.HasField("interaction_requested"):
                    stream.cancel()
                    break
            c.cancel(big.run_id)
            c.watch(big.run_id, after=4098)
            small = c.create("small", script("repeat 8 say .")).run
            c.watch(small.run_id)

            def get(run_id: str) -> Callable[[], float]:
                def once() -> float:
                    start = time.perf_counter()
                    c.get(run_id)
                    return time.perf_counter() - start
                return once

            get(big.run_id)(), get(small.run_id)()
            _spread("GetRun, 4,099-event run / 10-event run",
                    _alternate(args.rounds * 4, get(big.run_id), get(small.run_id)), "<= 1.5")

            frames = [r.SerializeToString() for r in c.runs.WatchRun(
                pb.rs.WatchRunRequest(run_id=big.run_id), metadata=c.md, timeout=120)]
            assert len(frames) == 4099
            frames_file = root / "frames.bin"
            frames_file.write_bytes(b"".join(struct.pack(">I", len(f)) + f for f in frames))
            bare = subprocess.Popen(
                [sys.executable, str(HERE / "bare_replay_server.py"), str(worker.state),
                 str(frames_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                assert bare.stdout is not None
                port = int(bare.stdout.readline())
                bare_channel = grpc.secure_channel(
                    f"127.0.0.1:{port}", grpc.ssl_channel_credentials(root_certificates=worker.pem))
                bare_stub = run_service_pb2_grpc.RunServiceStub(bare_channel)

                def replay(stub: object) -> Callable[[], float]:
                    def once() -> float:
                        start = time.perf_counter()
                        n = sum(1 for _ in stub.WatchRun(  # type: ignore[attr-defined]
                            pb.rs.WatchRunRequest(run_id=big.run_id), metadata=c.md,
                            timeout=120))
                        assert n == 4099
                        return n / (time.perf_counter() - start)
                    return once

                replay(c.runs)(), replay(bare_stub)()
                ratios = _alternate(args.replays, replay(c.runs), replay(bare_stub))
                _spread("WatchRun replay of 4,099 events, worker / bare grpclib (same transport, "
                        "same frames, same TLS)", ratios, ">= 0.85")
                bare_channel.close()
            finally:
                if bare.stdin is not None:
                    bare.stdin.close()
                bare.wait(timeout=30)

            produced = 0

            def produce(polled: bool) -> Callable[[], float]:
                def once() -> float:
                    nonlocal produced
                    produced += 1
                    stop = threading.Event()
                    start = time.perf_counter()
                    run_id = c.create(f"produce-{produced}", script("repeat 4093 say .")).run.run_id
                    poller = None
                    if polled:
                        def poll() -> None:
                            while not stop.wait(0.01):
                                c.get(run_id)
                        poller = threading.Thread(target=poll)
                        poller.start()
                    c.watch(run_id, after=4094, timeout=300)
                    took = time.perf_counter() - start
                    stop.set()
                    if poller is not None:
                        poller.join()
                    return took
                return once

            _spread("producing a 4,095-event run, polled by GetRun every 10 ms / unpolled",
                    _alternate(args.productions, produce(True), produce(False)), "<= 1.1")

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
