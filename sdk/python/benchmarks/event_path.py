"""The SDK's per-event watch cost alone, with no network: microseconds per event.

Feeds the encoded ``WatchRunResponse`` messages of a run shaped like ``bench.py``'s
(status changes, 4,093 outputs, a prompt, its resolution, the terminal event) through
the exact code a sync watch runs: ``Watch`` iterated over a stand-in connection whose
``WatchRun`` call yields those bytes and whose closing ``GetRun`` answers at once. The
baseline is what a raw grpcio stub does for each message on the caller's side besides
grpcio's own code: decode it with ``FromString`` and read the event. The difference is
the SDK's own work per event, the share ``bench.py`` cannot isolate on a shared
machine. Rounds alternate the two sides; the median and min-max of each are printed.

Two settings, both printed. *Warm*: the messages follow each other with nothing in
between, so the SDK's code and data stay in the CPU caches. This flatters the SDK: in a
networked watch (``bench.py``) grpcio and the trust relay run between two events, and
each step of the SDK's work was measured there to cost 20-40% more than warm. *Cold*:
before each message the stand-in writes ``--cold`` bytes of scratch memory (both sides
alike), which evicts the SDK's data as that traffic does; it recovers 0.1-0.3 us of the
0.4-0.6 us difference (the rest is code-cache and branch-predictor disturbance, which a
memory write does not reproduce). Neither setting counts the closing ``GetRun``, answered
at once here, which costs about 0.13 us per event of caller CPU in a networked 4,099-event
watch. Where the remaining microseconds go: ``benchmarks/README.md``.

Usage: python benchmarks/event_path.py [--rounds N] [--events N] [--cold BYTES] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import colossus_agent_client as colossus
from colossus_agent_client._watch import Watch
from colossus_agent_client.api.v1alpha1 import run_service_pb2, runs_pb2

RUN_ID = "run_01JD5Z8Q2M4X7N9P3R6T8V0W2Y"


def encoded_run(outputs: int) -> list[bytes]:
    """The wire messages of a run: start, ``outputs`` deltas, a prompt, a cancel."""
    events: list[runs_pb2.RunEvent] = []

    def add(**payload: Any) -> None:
        event = runs_pb2.RunEvent(run_id=RUN_ID, sequence=len(events) + 1, **payload)
        event.event_time.FromMicroseconds(1_764_540_000_000_000 + len(events) * 250)
        events.append(event)

    add(
        status_changed=runs_pb2.StatusChanged(
            previous_status=runs_pb2.RUN_STATUS_QUEUED, status=runs_pb2.RUN_STATUS_RUNNING
        )
    )
    for i in range(outputs):
        add(output_delta=runs_pb2.OutputDelta(text=f"event {i}\n"))
    add(
        interaction_requested=runs_pb2.InteractionRequested(
            interaction=runs_pb2.Interaction(
                interaction_id="int_1",
                prompt=runs_pb2.Prompt(question="Continue?", choices=["yes", "no"]),
            )
        )
    )
    add(
        status_changed=runs_pb2.StatusChanged(
            previous_status=runs_pb2.RUN_STATUS_WAITING_FOR_INPUT,
            status=runs_pb2.RUN_STATUS_CANCELLING,
        )
    )
    add(terminated=runs_pb2.RunTerminated(status=runs_pb2.RUN_STATUS_CANCELLED))
    return [run_service_pb2.WatchRunResponse(event=e).SerializeToString() for e in events]


_scratch = bytearray(1 << 20)


def _with_cache_traffic(messages: list[bytes], size: int) -> Iterator[bytes]:
    """The messages, with ``size`` bytes of scratch memory written before each one."""
    scratch, zeros = _scratch, bytes(size)
    for data in messages:
        scratch[:size] = zeros
        yield data


class _Call:
    def __init__(self, messages: list[bytes], cold: int = 0) -> None:
        self._messages = messages
        self._cold = cold

    def __iter__(self) -> Iterator[bytes]:
        if self._cold:
            return _with_cache_traffic(self._messages, self._cold)
        return iter(self._messages)

    def cancel(self) -> None:
        pass


class _Options:
    timeout = 10.0


class _Connection:
    """Just what ``Watch`` reads of a ``SyncConnection``."""

    options = _Options()
    # No advertised request cap: the watch's size check (C7) passes, as with a worker.
    server_info = SimpleNamespace(limits=SimpleNamespace(max_request_bytes=0))

    def __init__(self, messages: list[bytes], last_sequence: int, cold: int) -> None:
        self._messages = messages
        self._cold = cold
        answer = run_service_pb2.GetRunResponse()
        answer.run.run_id = RUN_ID
        answer.run.status = runs_pb2.RUN_STATUS_CANCELLED
        answer.run.last_sequence = last_sequence
        self._answer = answer

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", "Bearer x"),)

    def watch_run_encoded(self, request: Any, metadata: Any) -> _Call:
        return _Call(self._messages, self._cold)

    def get_run_in_place(self, request: Any, timeout: Any, metadata: Any) -> _Call:
        return _Call([self._answer])  # type: ignore[list-item]


class _Backend:
    def __init__(self, connection: _Connection) -> None:
        self._connection = connection

    def connection(self) -> _Connection:
        return self._connection


def sdk_side(messages: list[bytes], cold: int = 0) -> int:
    backend = _Backend(_Connection(messages, len(messages), cold))
    watch = Watch(
        backend,  # type: ignore[arg-type]
        RUN_ID,
        after_sequence=0,
        policy=colossus.RetryPolicy(),
        on_reconnect=None,
        idle_timeout=None,
    )
    n = 0
    for _event in watch:
        n += 1
    return n


def raw_side(messages: list[bytes], cold: int = 0) -> int:
    decode = run_service_pb2.WatchRunResponse.FromString
    n = 0
    for data in _Call(messages, cold):
        if decode(data).event.sequence:
            n += 1
    return n


def _measure(messages: list[bytes], rounds: int, cold: int, label: str) -> None:
    sides = {"sdk": sdk_side, "raw": raw_side}
    total = len(messages)
    for side in sides.values():
        assert side(messages, cold) == total  # warm-up, and both read every event
    us: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(rounds):
        for name in list(sides) if i % 2 == 0 else list(reversed(sides)):
            started = time.thread_time()
            sides[name](messages, cold)
            us[name].append((time.thread_time() - started) * 1e6 / total)
    extra = [s - r for s, r in zip(us["sdk"], us["raw"], strict=True)]
    for name, values in (*us.items(), ("sdk - raw", extra)):
        print(
            f"{label} {name:<9} {statistics.median(values):6.3f} us/event "
            f"(min {min(values):.3f}, max {max(values):.3f}; {rounds} alternating rounds, "
            f"{total} events, caller CPU time)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--events", type=int, default=4093, help="output deltas in the run")
    parser.add_argument(
        "--cold",
        type=int,
        default=256 * 1024,
        help="bytes of scratch memory written between two messages in the cold setting",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the SDK side once")
    args = parser.parse_args()
    if not 0 < args.cold <= len(_scratch):
        parser.error(f"--cold must be between 1 and {len(_scratch)}")
    messages = encoded_run(args.events)
    if args.profile:
        with cProfile.Profile() as profile:
            for _ in range(5):
                sdk_side(messages)
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)
        return
    _measure(messages, args.rounds, 0, "warm")
    _measure(messages, args.rounds, args.cold, "cold")


if __name__ == "__main__":
    main()
