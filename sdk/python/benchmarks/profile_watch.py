"""A steady load for a sampling profiler: the SDK (or the raw stub) watching one long run.

Starts the reference worker, creates the 4,099-event run ``bench.py`` uses, then watches
it ``--rounds`` times with the SDK (``--side sdk``, the default), the raw grpcio stub
(``--side raw``) or the SDK's own channel read like the raw stub (``--side relay``),
alternating when ``--side`` is repeated. It prints each round's events per second and
the CPU time the client process, its calling thread and the worker spent, then each
side's caller CPU per event. Run it under a sampling profiler to see where a watch
spends its time across the caller's thread and the trust relay's. With py-spy (pinned in
``requirements-profile.txt``, installed into a venv of its own) and the environment
``./noxw --envdir .nox-pyperf -s bench_python_sdk`` created::

    python -m venv /tmp/spy && /tmp/spy/bin/pip install -r benchmarks/requirements-profile.txt
    PATH=../../.nox-pyperf/bench_python_sdk/bin:$PATH /tmp/spy/bin/py-spy record --gil \
        --threads -r 1000 -f raw -o watch.txt -- python benchmarks/profile_watch.py

(run from ``sdk/python``; ``--gil`` counts only the thread holding the GIL, ``--idle``
instead shows where threads wait).
Usage: python benchmarks/profile_watch.py [--rounds N] [--side sdk|raw|relay ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import colossus_agent_client as colossus
from bench import _make_long_run, _raw_channel, started_worker
from colossus_agent_client._connection import _caps
from colossus_agent_client._transport._channel import sync_channel_options
from colossus_agent_client.api.v1alpha1 import run_service_pb2, run_service_pb2_grpc


def _worker_cpu(pid: int) -> float:
    """Seconds of CPU the worker process used so far (user + system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument(
        "--side",
        action="append",
        choices=("sdk", "raw", "relay"),
        help="repeat to alternate sides (default: sdk); relay: the SDK's channel read raw",
    )
    args = parser.parse_args()
    sides = tuple(args.side or ("sdk",))
    with started_worker() as started:
        worker, opts, auth = started.worker, started.options, started.auth
        with colossus.Client.connect(opts) as client:
            run_id = _make_long_run(client)
            channel = _raw_channel(
                worker.api_dir, sync_channel_options(*_caps(opts, client.server_info))
            )
            stub = run_service_pb2_grpc.RunServiceStub(channel)
            request = run_service_pb2.WatchRunRequest(run_id=run_id)
            assert worker.process is not None
            worker_pid = worker.process.pid
            relay = client._backend.connection().watch_run_encoded
            decode = run_service_pb2.WatchRunResponse.FromString
            caller_us: dict[str, list[float]] = {side: [] for side in sides}
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
                    elif side == "raw":
                        n = sum(1 for _ in stub.WatchRun(request, metadata=auth))
                    else:  # decoded like the raw stub's deserializer does
                        n = len([decode(data).event for data in relay(request, metadata=auth)])
                    caller = time.thread_time() - main_cpu
                    wall = time.perf_counter() - wall
                    print(
                        f"{side}: {n / wall:6.0f} events/s  wall {wall * 1e3:5.0f} ms  "
                        f"client cpu {(time.process_time() - cpu) * 1e3:5.0f} ms "
                        f"(caller {caller * 1e3:4.0f})  "
                        f"worker cpu {(_worker_cpu(worker_pid) - busy) * 1e3:4.0f} ms"
                    )
                    caller_us[side].append(caller * 1e6 / n)
            channel.close()
    for side, values in caller_us.items():
        print(
            f"{side}: caller CPU per event, median {statistics.median(values):.2f} us "
            f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} rounds)"
        )


if __name__ == "__main__":
    main()
