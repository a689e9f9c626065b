"""A steady load for a sampling profiler: the SDK (or the raw stub) watching one long run.

Starts the reference worker, creates the 4,099-event run ``bench.py`` uses, then watches
it ``--rounds`` times with the SDK (``--side sdk``, the default), the raw grpcio stub
(``--side raw``) or both in alternating order (``--side both``), printing each round's
events per second and the CPU time the client process, its calling thread and the
worker spent. Run it under a sampling profiler to see where a watch spends its time
across the caller's thread and the trust relay's. With py-spy (pinned in
``requirements-profile.txt``, installed into a venv of its own) and the environment
``./noxw --envdir .nox-pyperf -s bench_python_sdk`` created::

    python -m venv /tmp/spy && /tmp/spy/bin/pip install -r benchmarks/requirements-profile.txt
    PATH=../../.nox-pyperf/bench_python_sdk/bin:$PATH /tmp/spy/bin/py-spy record --gil \
        --threads -r 1000 -f raw -o watch.txt -- python benchmarks/profile_watch.py

(run from ``sdk/python``; ``--gil`` counts only the thread holding the GIL, ``--idle``
instead shows where threads wait).
Usage: python benchmarks/profile_watch.py [--rounds N] [--side sdk|raw|both]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import colossus_agent_client as colossus
from bench import RELAXED, _make_long_run, _options, _raw_channel
from colossus_agent_client._connection import _caps
from colossus_agent_client._transport._channel import sync_channel_options
from colossus_agent_client.api.v1alpha1 import run_service_pb2, run_service_pb2_grpc

sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "tests" / "integration")]

from worker import ReferenceWorker, find_worker  # noqa: E402


def _worker_cpu(pid: int) -> float:
    """Seconds of CPU the worker process used so far (user + system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--side", choices=("sdk", "raw", "both"), default="sdk")
    args = parser.parse_args()
    executable = find_worker()
    if executable is None:
        raise SystemExit("the reference worker is needed: pip install ./conformance")
    with tempfile.TemporaryDirectory() as tmp:
        worker = ReferenceWorker(executable, Path(tmp))
        enrollment = worker.enroll()
        worker.start(*RELAXED)
        try:
            opts = _options(
                worker.api_dir,
                enrollment.instance_id,
                enrollment.certificate_sha256,
                enrollment.bearer,
            )
            with colossus.Client.connect(opts) as client:
                run_id = _make_long_run(client)
                channel = _raw_channel(
                    worker.api_dir, sync_channel_options(*_caps(opts, client.server_info))
                )
                stub = run_service_pb2_grpc.RunServiceStub(channel)
                auth = (("authorization", f"Bearer {enrollment.bearer}"),)
                request = run_service_pb2.WatchRunRequest(run_id=run_id)
                assert worker.process is not None
                worker_pid = worker.process.pid
                sides = ("sdk", "raw") if args.side == "both" else (args.side,)
                for i in range(args.rounds):
                    for side in sides if i % 2 == 0 else tuple(reversed(sides)):
                        wall, cpu, main_cpu = (
                            time.perf_counter(),
                            time.process_time(),
                            time.thread_time(),
                        )
                        busy = _worker_cpu(worker_pid)
                        if side == "sdk":
                            n = sum(1 for _ in client.runs.watch(run_id))
                        else:
                            n = sum(1 for _ in stub.WatchRun(request, metadata=auth))
                        wall = time.perf_counter() - wall
                        print(
                            f"{side}: {n / wall:6.0f} events/s  wall {wall * 1e3:5.0f} ms  "
                            f"client cpu {(time.process_time() - cpu) * 1e3:5.0f} ms "
                            f"(caller {(time.thread_time() - main_cpu) * 1e3:4.0f})  "
                            f"worker cpu {(_worker_cpu(worker_pid) - busy) * 1e3:4.0f} ms"
                        )
                channel.close()
        finally:
            worker.stop()


if __name__ == "__main__":
    main()
