"""Where the SDK's per-event microseconds go, in a networked watch: a table.

Starts the reference worker, creates ``bench.py``'s 4,099-event run, then watches it in
alternating rounds with the raw grpcio stub (same channel options as the SDK's) and with
the SDK in several variants. Each variant replaces one piece of the watch's per-event
path with a stub that skips its work, so the difference from the full SDK is what that
piece costs where it really runs: between grpcio's and the relay's work, with the
caches as they leave them. The stubs break the delivery rules on purpose (no replay
window, no checks, no models), so this is a measurement, never a way to run the SDK.
It also times the tail of a watch (from the terminal event to the end of the loop: the
closing ``GetRun`` and the stream's end) against the raw stub's.

Prints the median caller CPU per event (thread time, much steadier than rates on a
shared machine) of each side minus the raw stub's, with the min-max of the per-round
differences.

Usage: python benchmarks/event_costs.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import colossus_agent_client as colossus
from bench import _make_long_run, _raw_channel, started_worker
from colossus_agent_client import _convert, _watch
from colossus_agent_client._connection import _caps
from colossus_agent_client._transport._channel import sync_channel_options
from colossus_agent_client._transport._stream_reader import messages
from colossus_agent_client._watch_core import WatchCore
from colossus_agent_client.api.v1alpha1 import run_service_pb2, run_service_pb2_grpc

_admit = WatchCore.admit_next
_delta = _convert.output_delta_event
# The watch driver's module globals: its stream reader is swapped there.
_WATCH_GLOBALS: dict[str, Any] = vars(_watch)


def _admit_without_window(
    self: WatchCore[Any], run_id: str, sequence: int, content: Any, size: int
) -> bool:
    # The admission's checks and cursor, without the replay window's bookkeeping.
    if (
        sequence == self.last_sequence + 1
        and self._terminal_sequence is None
        and run_id == self.run_id
    ):
        self.last_sequence = sequence
        return True
    return False


def _admit_nothing(
    self: WatchCore[Any], run_id: str, sequence: int, content: Any, size: int
) -> bool:
    self.last_sequence = sequence
    return True


def _text_only(pb: Any, run_id: str, sequence: int) -> Any:
    pb.output_delta.text  # noqa: B018 (the read is what is measured)
    return pb


def _no_conversion(pb: Any, run_id: str, sequence: int) -> Any:
    return pb


VARIANTS: dict[str, tuple[Callable[..., bool], Callable[..., Any]]] = {
    "sdk": (_admit, _delta),
    # The same work, but each message read through grpcio's own stream iterator.
    "grpcio's iterator": (_admit, _delta),
    "no replay window": (_admit_without_window, _delta),
    "no admission": (_admit_nothing, _delta),
    "no models (text read)": (_admit, _text_only),
    "no conversion": (_admit, _no_conversion),
    "no admission, no conversion": (_admit_nothing, _no_conversion),
}


@contextmanager
def _variant(name: str) -> Iterator[None]:
    admit, delta = VARIANTS[name]
    WatchCore.admit_next = admit  # type: ignore[method-assign]
    _convert.output_delta_event = delta
    if name == "grpcio's iterator":
        _WATCH_GLOBALS["messages"] = iter
    try:
        yield
    finally:
        WatchCore.admit_next = _admit  # type: ignore[method-assign]
        _convert.output_delta_event = _delta
        _WATCH_GLOBALS["messages"] = messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with started_worker() as started, colossus.Client.connect(started.options) as client:
        run_id = _make_long_run(client)
        events = client.runs.get(run_id).last_sequence
        channel = _raw_channel(
            started.worker.api_dir,
            sync_channel_options(*_caps(started.options, client.server_info)),
        )
        stub = run_service_pb2_grpc.RunServiceStub(channel)
        request = run_service_pb2.WatchRunRequest(run_id=run_id)
        tails: dict[str, list[float]] = {"raw": [], "sdk": []}

        def raw() -> None:
            tail = 0.0
            for response in stub.WatchRun(request, metadata=started.auth):
                if response.event.sequence == events:
                    tail = time.thread_time()
            tails["raw"].append(time.thread_time() - tail)

        def sdk(name: str) -> Callable[[], None]:
            def measure() -> None:
                with _variant(name):
                    tail = 0.0
                    for event in client.runs.watch(run_id):
                        if event.sequence == events:
                            tail = time.thread_time()
                    if name == "sdk":
                        tails["sdk"].append(time.thread_time() - tail)

            return measure

        sides: dict[str, Callable[[], None]] = {"raw": raw}
        sides.update({name: sdk(name) for name in VARIANTS})
        for side in sides.values():
            side()  # warm-up
        tails = {"raw": [], "sdk": []}
        us: dict[str, list[float]] = {name: [] for name in sides}
        for i in range(args.rounds):
            for name in list(sides) if i % 2 == 0 else list(reversed(sides)):
                started_at = time.thread_time()
                sides[name]()
                us[name].append((time.thread_time() - started_at) * 1e6 / events)
        channel.close()
    print(f"raw stub: {statistics.median(us['raw']):.2f} us caller CPU per event ({events} events)")
    for name in VARIANTS:
        extra = [a - b for a, b in zip(us[name], us["raw"], strict=True)]
        print(
            f"{name:<28} - raw: {statistics.median(extra):5.2f} us/event "
            f"(min {min(extra):.2f}, max {max(extra):.2f}; {args.rounds} alternating rounds)"
        )
    sdk_tail, raw_tail = statistics.median(tails["sdk"]), statistics.median(tails["raw"])
    print(
        f"tail after the terminal event: sdk {sdk_tail * 1e6:.0f} us, raw {raw_tail * 1e6:.0f} us "
        f"(the difference is {(sdk_tail - raw_tail) * 1e6 / events:.3f} us per event)"
    )


if __name__ == "__main__":
    main()
