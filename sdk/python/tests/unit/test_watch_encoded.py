"""The watch reads events as encoded bytes and sends its closing GetRun early.

What must not change for that: a replay re-encoded with another field order is still a
replay, a replay with other content is still refused, a message that does not decode is
a typed error, and the closing ``GetRun`` keeps its count and retry rules (one call, the
read retry policy for ``UNAVAILABLE``, none after a final error), for both clients.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client._watch import Watch, _new_core
from colossus_agent_client._watch_core import Verdict
from colossus_agent_client.api.v1alpha1 import run_service_pb2, runs_pb2
from fake_worker import FakeWorker, make_run, output_event, terminal_event

RUN = "run_1"
POLICY = colossus.RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.02)


def _encoded(event: runs_pb2.RunEvent) -> bytes:
    return run_service_pb2.WatchRunResponse(event=event).SerializeToString()


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return bytes([number << 3 | wire]) + payload


def _reordered(run_id: str, sequence: int, text: str) -> bytes:
    """A WatchRunResponse whose event lists its fields in reverse order (still valid)."""
    delta = runs_pb2.OutputDelta(text=text).SerializeToString()
    event = runs_pb2.RunEvent()
    number = {f.name: f.number for f in event.DESCRIPTOR.fields}
    body = (
        _field(number["output_delta"], 2, bytes([len(delta)]) + delta)
        + _field(number["sequence"], 0, bytes([sequence]))
        + _field(number["run_id"], 2, bytes([len(run_id)]) + run_id.encode())
    )
    return _field(1, 2, bytes([len(body)]) + body)


def test_a_reencoded_replay_is_dropped_and_an_altered_one_refused() -> None:
    original = output_event(RUN, 1)
    original.ClearField("event_time")
    first = _encoded(original)
    again = _reordered(RUN, 1, original.output_delta.text)
    assert again != first
    assert run_service_pb2.WatchRunResponse.FromString(again).event == original
    core = _new_core(RUN, 0, POLICY)
    assert core.on_event(RUN, 1, first, terminal=False, size=len(first)) is Verdict.DELIVER
    assert core.on_event(RUN, 1, again, terminal=False, size=len(again)) is Verdict.DROP
    altered = _reordered(RUN, 1, "something else")
    with pytest.raises(colossus.ProtocolViolationError) as info:
        core.on_event(RUN, 1, altered, terminal=False, size=len(altered))
    assert info.value.reason == "WATCH_REPLAY_ALTERED"


class _Stream:
    def __init__(self, items: list[bytes]) -> None:
        self._items: Iterator[bytes] = iter(items)

    def __iter__(self) -> _Stream:
        return self

    def __next__(self) -> bytes:
        return next(self._items)

    def cancel(self) -> None:
        pass


class _Backend:
    """One connection whose WatchRun stream yields the given raw messages."""

    def __init__(self, items: list[bytes]) -> None:
        self.items = items
        self.options = SimpleNamespace(timeout=5.0)
        self.runs = SimpleNamespace()
        # No advertised request cap: the watch's C7 size check passes.
        self.server_info = SimpleNamespace(limits=SimpleNamespace(max_request_bytes=0))

    def connection(self) -> Any:
        return self

    def metadata(self) -> tuple[()]:
        return ()

    def watch_run_encoded(self, request: object, metadata: object) -> _Stream:
        return _Stream(self.items)


def test_an_undecodable_message_is_a_protocol_violation() -> None:
    good = _encoded(output_event(RUN, 1))
    watch = Watch(
        _Backend([good, b"\xff\xff\xff"]),  # type: ignore[arg-type]
        RUN,
        after_sequence=0,
        policy=POLICY,
        on_reconnect=None,
        idle_timeout=None,
    )
    iterator = iter(watch)
    assert next(iterator).sequence == 1
    with pytest.raises(colossus.ProtocolViolationError) as info:
        next(iterator)
    assert info.value.reason == "RESPONSE_MALFORMED"


def _finished_run(fake: FakeWorker, n: int) -> None:
    fake.b.events[RUN] = [output_event(RUN, i) for i in range(1, n)] + [terminal_event(RUN, n)]
    fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=n)


def test_a_caller_stopping_at_the_terminal_event_sends_no_get_run(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _finished_run(fake, 3)
    with client.runs.watch(RUN) as watch:
        for event in watch:
            if event.is_terminal:
                break
    assert "GetRun" not in fake.methods()


def test_the_closing_get_run_is_one_call_retried_under_the_policy(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _finished_run(fake, 3)
    fake.b.fail["GetRun"] = [(grpc.StatusCode.UNAVAILABLE, "")]
    assert [e.sequence for e in client.runs.watch(RUN)] == [1, 2, 3]
    assert fake.methods().count("GetRun") == 2  # the early one failed, one retry


def test_a_final_error_of_the_closing_get_run_is_not_retried(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _finished_run(fake, 3)
    fake.b.fail["GetRun"] = [(grpc.StatusCode.INTERNAL, "")]
    seen = []
    with pytest.raises(colossus.InternalServerError):
        for event in client.runs.watch(RUN):
            seen.append(event.sequence)
    assert seen == [1, 2, 3]
    assert fake.methods().count("GetRun") == 1


async def test_async_closing_get_run_rules(
    fake: FakeWorker, options: colossus.DaemonOptions
) -> None:
    _finished_run(fake, 3)
    async with colossus.AsyncClient.connect(options) as client:
        got = [e.sequence async for e in client.runs.watch(RUN)]
        assert got == [1, 2, 3]
        assert fake.methods().count("GetRun") == 1
        fake.b.fail["GetRun"] = [(grpc.StatusCode.UNAVAILABLE, "")]
        assert [e.sequence async for e in client.runs.watch(RUN)] == [1, 2, 3]
        assert fake.methods().count("GetRun") == 3
        async with client.runs.watch(RUN) as watch:
            async for event in watch:
                if event.is_terminal:
                    break
        assert fake.methods().count("GetRun") == 3
