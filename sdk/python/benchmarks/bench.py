"""Figures for the Python SDK, measured in one run (``./noxw -s bench_python_sdk``).

1. Watch throughput: the SDK's ``runs.watch`` against a raw grpcio stub reading the same
   4,099-event run (4,093 outputs, a prompt, then a cancel) from the reference worker.
   The raw stub's channel gets exactly the SDK's sync channel options (message caps,
   retries off, streams read on the calling thread), so the ratio measures what the SDK
   does per event, not a transport setting. Both sides read every event and are timed
   until the terminal event is in the caller's hands; ``watch_complete_ratio`` also counts
   the ``GetRun`` reconciliation that S1 requires before the SDK's loop ends (the raw stub
   does none). The SDK's bytes pass through its trust relay; the raw stub talks TLS to
   the worker directly, so the ratios include what the relay costs. One untimed warm-up
   round each, then rounds that alternate which side goes first (at least ``--rounds``,
   more up to ``--max-rounds`` while the headline ratio's median is uncertain by more
   than +-0.03); every ratio is printed as the median of the per-round ratios with its
   95% confidence interval and the min-max spread (never a best-of).
   For context, ``watch_ratio_vs_default_stub`` compares with a default-options stub.
   To show where the gap goes, a fourth side reads the SDK's own channel (through the
   relay) exactly like the raw stub: ``watch_relay_ratio`` is what the relay costs,
   ``watch_sdk_vs_relay_ratio`` what the SDK's per-event work and closing GetRun cost;
   the calling thread's CPU time per event is printed for every side (``event_path.py``
   measures the SDK's per-event work alone, without the network). To show where the
   wall time goes, each side also gets the worker's CPU per event during its rounds, its
   wall time per event and how long its first event took: when the first event comes
   only after most of the worker's CPU was spent, the two sides took turns and the wall
   time is near the sum of both CPUs; when it comes early, they overlapped.
2. Connect time: ``Client.connect`` and ``AsyncClient.connect`` (discovery files -> the
   trust relay's checked TLS 1.3 connection -> channel through the relay -> verified
   GetServerInfo) against a raw TLS channel plus one GetServerInfo, in alternating rounds
   (see ``connect_rounds.py``).
3. RSS growth of the client process over one 100,000-event watch, served by the test
   fake worker in a separate process (the reference worker caps a run at 4,099 events).

Usage: python benchmarks/bench.py [--rounds N] [--max-rounds N] [--events N] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

import colossus_agent_client as colossus
from colossus_agent_client._connection import _caps
from colossus_agent_client._transport._channel import sync_channel_options
from colossus_agent_client.api.v1alpha1 import (
    run_service_pb2,
    run_service_pb2_grpc,
)

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests" / "integration"), str(HERE.parent / "tests")]

from worker import Enrollment, ReferenceWorker, find_worker  # noqa: E402

from connect_rounds import connect_rounds  # noqa: E402
from fake_worker import BEARER  # noqa: E402

DEFAULT_OPTIONS: Sequence[tuple[str, object]] = (("grpc.use_local_subchannel_pool", 1),)

RELAXED = (
    "--limit",
    "create_rate_per_application_per_second=1000",
    "--limit",
    "create_rate_per_application_burst=1000",
)


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _options(directory: Path, instance_id: str, pin: str, bearer: str) -> colossus.DaemonOptions:
    return colossus.DaemonOptions(
        public_api_dir=directory,
        expected_instance_id=instance_id,
        expected_certificate_sha256=pin,
        credentials=colossus.InMemoryCredentialProvider(bearer),
    )


def _raw_channel(
    directory: Path, options: Sequence[tuple[str, object]] = DEFAULT_OPTIONS
) -> grpc.Channel:
    descriptor = json.loads((directory / "endpoint.json").read_text())
    target = descriptor["endpoint"].removeprefix("https://")
    creds = grpc.ssl_channel_credentials(
        root_certificates=(directory / "certificate.pem").read_bytes()
    )
    return grpc.secure_channel(target, creds, options=options)


@dataclass(frozen=True)
class StartedWorker:
    """A running reference worker with one enrolled client."""

    worker: ReferenceWorker
    options: colossus.DaemonOptions
    """Connects the SDK to it (pinned instance and certificate, the enrolled bearer)."""
    auth: tuple[tuple[str, str], ...]
    """The bearer as call metadata, for raw stubs."""


@contextlib.contextmanager
def started_worker() -> Iterator[StartedWorker]:
    """Starts the reference worker in a temporary folder, enrols a client, stops it after."""
    executable = find_worker()
    if executable is None:
        raise SystemExit("the reference worker is needed: pip install ./conformance")
    with tempfile.TemporaryDirectory() as tmp:
        worker = ReferenceWorker(executable, Path(tmp))
        enrollment: Enrollment = worker.enroll()
        worker.start(*RELAXED)
        try:
            yield StartedWorker(
                worker,
                _options(
                    worker.api_dir,
                    enrollment.instance_id,
                    enrollment.certificate_sha256,
                    enrollment.bearer,
                ),
                (("authorization", f"Bearer {enrollment.bearer}"),),
            )
        finally:
            worker.stop()


def _make_long_run(client: colossus.Client) -> str:
    steps = [
        "colossus-script v1",
        *(f"say event {i}" for i in range(4093)),
        "ask Continue? | yes | no",
    ]
    run_id = client.runs.create("\n".join(steps)).run.run_id
    while client.runs.get(run_id).status is not colossus.RunStatus.WAITING_FOR_INPUT:
        time.sleep(0.2)
    client.runs.cancel(run_id)
    while not client.runs.get(run_id).status.is_terminal:
        time.sleep(0.1)
    return run_id


def watch_and_connect(rounds: int, max_rounds: int) -> dict[str, Any]:
    with started_worker() as started:
        worker, opts, auth = started.worker, started.options, started.auth
        with colossus.Client.connect(opts) as client:
            run_id = _make_long_run(client)
            events = client.runs.get(run_id).last_sequence
            same_channel = _raw_channel(
                worker.api_dir, sync_channel_options(*_caps(opts, client.server_info))
            )
            default_channel = _raw_channel(worker.api_dir)
            request = run_service_pb2.WatchRunRequest(run_id=run_id)
            decode = run_service_pb2.WatchRunResponse.FromString

            def sdk_round() -> tuple[float, float, float]:
                started = time.perf_counter()
                n, delivered, first = 0, 0.0, 0.0
                for event in client.runs.watch(run_id):
                    n += 1
                    if n == 1:
                        first = time.perf_counter() - started
                    if event.is_terminal:
                        delivered = time.perf_counter() - started
                assert n == events
                # Delivery, and complete: with the GetRun reconciliation S1 requires.
                return n / delivered, n / (time.perf_counter() - started), first

            def relay_round() -> tuple[float, float, float]:
                # The SDK's own channel (through the trust relay), read like the raw
                # stub: what the relay costs, without the SDK's per-event work.
                conn = client._backend.connection()
                started = time.perf_counter()
                n, delivered, first = 0, 0.0, 0.0
                for data in conn.watch_run_encoded(request, metadata=auth):
                    n += 1
                    if n == 1:
                        first = time.perf_counter() - started
                    if decode(data).event.sequence == events:
                        delivered = time.perf_counter() - started
                assert n == events
                return n / delivered, n / (time.perf_counter() - started), first

            def raw_round(channel: grpc.Channel) -> Callable[[], tuple[float, float, float]]:
                stub = run_service_pb2_grpc.RunServiceStub(channel)

                def measure() -> tuple[float, float, float]:
                    started = time.perf_counter()
                    n, delivered, first = 0, 0.0, 0.0
                    for response in stub.WatchRun(request, metadata=auth):
                        n += 1
                        if n == 1:
                            first = time.perf_counter() - started
                        if response.event.sequence == events:
                            delivered = time.perf_counter() - started
                    assert n == events
                    return n / delivered, n / (time.perf_counter() - started), first

                return measure

            sides = {
                "sdk": sdk_round,
                "raw": raw_round(same_channel),
                "relay": relay_round,
                "default": raw_round(default_channel),
            }
            for measure in sides.values():
                measure()  # warm-up: connections, caches, lazy imports
            rates: dict[str, list[float]] = {name: [] for name in sides}
            # CPU time per event: of the calling thread (what each side costs the caller,
            # much less sensitive to the machine's load than the rates), and of the whole
            # client process (with the relay's and grpcio's threads: what a busy machine
            # has to find for each event).
            cpu_us: dict[str, list[float]] = {name: [] for name in sides}
            process_us: dict[str, list[float]] = {name: [] for name in sides}
            # Where the wall time goes: the worker's CPU per event during each side's
            # rounds, the wall time per event until the stream's end, and how long the
            # first event took (the worker's share before this side could start).
            worker_us: dict[str, list[float]] = {name: [] for name in sides}
            wall_us: dict[str, list[float]] = {name: [] for name in sides}
            first_ms: dict[str, list[float]] = {name: [] for name in sides}
            assert worker.process is not None
            worker_pid = worker.process.pid
            sdk_complete_rates: list[float] = []
            done = 0
            # At least ``rounds``; more (up to ``max_rounds``) while the headline ratio's
            # median is still uncertain by more than +-0.03 (a noisy, shared machine).
            while done < rounds or (
                done < max_rounds
                and _median_interval_halfwidth(sdk_complete_rates, rates["raw"]) > 0.03
            ):
                for name in list(sides) if done % 2 == 0 else list(reversed(sides)):
                    cpu, process = time.thread_time(), time.process_time()
                    busy = _process_cpu_seconds(worker_pid)
                    rate, complete, first = sides[name]()
                    cpu_us[name].append((time.thread_time() - cpu) * 1e6 / events)
                    process_us[name].append((time.process_time() - process) * 1e6 / events)
                    worker_us[name].append((_process_cpu_seconds(worker_pid) - busy) * 1e6 / events)
                    wall_us[name].append(1e6 / complete)
                    first_ms[name].append(first * 1e3)
                    rates[name].append(rate)
                    if name == "sdk":
                        sdk_complete_rates.append(complete)
                done += 1
            same_channel.close()
            default_channel.close()

        connect = connect_rounds(worker.api_dir, opts, auth, rounds * 2)
    # Noise on a shared machine moves neighbouring rounds together, so each SDK round is
    # compared with the raw rounds run next to it, and the median of those ratios is taken.
    sdk_rates, raw_rates, default_rates = rates["sdk"], rates["raw"], rates["default"]
    relay_rates = rates["relay"]
    return {
        "watch_events": events,
        "watch_sdk_events_per_s": round(statistics.median(sdk_rates)),
        "watch_raw_events_per_s": round(statistics.median(raw_rates)),
        **_ratio("watch_ratio", sdk_rates, raw_rates),
        **_ratio("watch_complete_ratio", sdk_complete_rates, raw_rates),
        "watch_default_stub_events_per_s": round(statistics.median(default_rates)),
        **_ratio("watch_ratio_vs_default_stub", sdk_rates, default_rates),
        # Where the gap goes: the relay alone (the SDK's channel read like the raw stub)
        # against the raw stub, and the SDK's per-event work against the relay alone.
        "watch_relay_events_per_s": round(statistics.median(relay_rates)),
        **_ratio("watch_relay_ratio", relay_rates, raw_rates),
        **_ratio("watch_sdk_vs_relay_ratio", sdk_rates, relay_rates),
        "watch_rounds": done,
        **{
            f"watch_{name}_caller_cpu_us_per_event": round(statistics.median(values), 2)
            for name, values in cpu_us.items()
        },
        **{
            f"watch_{name}_process_cpu_us_per_event": round(statistics.median(values), 2)
            for name, values in process_us.items()
        },
        **{
            f"watch_{name}_worker_cpu_us_per_event": round(statistics.median(values), 2)
            for name, values in worker_us.items()
        },
        **{
            f"watch_{name}_wall_us_per_event": round(statistics.median(values), 2)
            for name, values in wall_us.items()
        },
        **{
            f"watch_{name}_first_event_ms": round(statistics.median(values), 1)
            for name, values in first_ms.items()
        },
        **connect,
    }


def _process_cpu_seconds(pid: int) -> float:
    """CPU seconds all threads of process ``pid`` used so far (Linux ``schedstat``, in ns);
    0 where ``/proc`` has no such file, which prints as a worker CPU of 0."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for task in tasks:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e9


def _median_interval(values: list[float]) -> tuple[float, float]:
    """A distribution-free 95% confidence interval of the median of ``values``.

    The order statistics whose ranks are n/2 -+ 0.98 sqrt(n) (the binomial count of
    values below the median, approximated as normal); with few values, the extremes.
    """
    ordered = sorted(values)
    n = len(ordered)
    reach = 0.98 * math.sqrt(n)
    low = max(0, math.floor(n / 2 - reach) - 1)
    high = min(n - 1, math.ceil(n / 2 + reach) - 1)
    return ordered[low], ordered[high]


def _median_interval_halfwidth(numerators: list[float], denominators: list[float]) -> float:
    if len(numerators) < 5:
        return math.inf
    low, high = _median_interval([a / b for a, b in zip(numerators, denominators, strict=True)])
    return (high - low) / 2


def _ratio(key: str, numerators: list[float], denominators: list[float]) -> dict[str, float]:
    """The median of the per-round ratios under ``key``, its 95% interval, min and max."""
    ratios = [a / b for a, b in zip(numerators, denominators, strict=True)]
    low, high = _median_interval(ratios)
    return {
        key: round(statistics.median(ratios), 3),
        f"{key}_ci_low": round(low, 3),
        f"{key}_ci_high": round(high, 3),
        f"{key}_min": round(min(ratios), 3),
        f"{key}_max": round(max(ratios), 3),
    }


def rss_over_long_watch(events: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "api"
        server = subprocess.Popen(
            [
                sys.executable,
                str(HERE.parent / "tests" / "fake_worker.py"),
                "--serve",
                str(directory),
                str(events),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            identity = json.loads(server.stdout.readline())
            opts = _options(
                directory, identity["instance_id"], identity["certificate_sha256"], BEARER
            )
            with colossus.Client.connect(opts) as client:
                baseline = 0
                peak = 0
                count = 0
                started = time.perf_counter()
                for event in client.runs.watch("run_bench"):
                    count += 1
                    if event.sequence == 5_000:
                        baseline = _rss_bytes()
                    elif event.sequence % 5_000 == 0:
                        peak = max(peak, _rss_bytes())
                elapsed = time.perf_counter() - started
                final = _rss_bytes()
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=30)
    return {
        "rss_watch_events": count,
        "rss_after_5000_mib": round(baseline / 2**20, 2),
        "rss_peak_mib": round(max(peak, final) / 2**20, 2),
        "rss_growth_mib": round((max(peak, final) - baseline) / 2**20, 2),
        "rss_watch_events_per_s": round(count / elapsed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=21, help="watch rounds at least")
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=61,
        help="watch rounds at most, run while the complete ratio's 95%% interval is wider than "
        "+-0.03",
    )
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = {
        **watch_and_connect(args.rounds, max(args.rounds, args.max_rounds)),
        **rss_over_long_watch(args.events),
    }
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    # The targets are issue 29's, the same for every SDK's bench.
    for title, key, target in (
        (
            "watch delivery / raw stub",
            "watch_ratio",
            _target(figures["watch_ratio"] >= 0.95, ">= 0.95"),
        ),
        (
            "watch including its closing GetRun / raw stub",
            "watch_complete_ratio",
            _target(figures["watch_complete_ratio"] >= 0.93, ">= 0.93"),
        ),
        ("watch through the relay alone / raw stub", "watch_relay_ratio", "the relay's share"),
        ("SDK watch / relay alone", "watch_sdk_vs_relay_ratio", "the per-event work's share"),
    ):
        print(
            f"{title}: median {figures[key]} (95% interval {figures[key + '_ci_low']}-"
            f"{figures[key + '_ci_high']}, min {figures[key + '_min']}, "
            f"max {figures[key + '_max']}, {figures['watch_rounds']} alternating rounds; {target})"
        )
    for what, suffix in (
        ("caller", "caller"),
        ("client process", "process"),
        ("worker", "worker"),
    ):
        print(
            f"{what} CPU per event (median, us): "
            + ", ".join(
                f"{name} {figures[f'watch_{name}_{suffix}_cpu_us_per_event']}"
                for name in ("sdk", "relay", "raw", "default")
            )
        )
    print(
        "wall time per event (median, us): "
        + ", ".join(
            f"{name} {figures[f'watch_{name}_wall_us_per_event']}"
            for name in ("sdk", "relay", "raw", "default")
        )
        + "; first event after (ms): "
        + ", ".join(
            f"{name} {figures[f'watch_{name}_first_event_ms']}"
            for name in ("sdk", "relay", "raw", "default")
        )
    )
    print(
        f"RSS growth {figures['rss_growth_mib']} MiB (target < 5 MiB): "
        f"{'met' if figures['rss_growth_mib'] < 5 else 'NOT met'}"
    )
    for name, key in (("Client.connect", "connect"), ("AsyncClient.connect", "async_connect")):
        print(
            f"{name} / raw channel + GetServerInfo: median {figures[key + '_ratio']} "
            f"(min {figures[key + '_ratio_min']}, max {figures[key + '_ratio_max']}, "
            f"{args.rounds * 2} alternating rounds; "
            f"{_target(figures[key + '_ratio'] <= 1.5, '<= 1.5')})"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


def _target(met: bool, bound: str) -> str:
    return f"target {bound}: {'met' if met else 'NOT met'}"


if __name__ == "__main__":
    main()
