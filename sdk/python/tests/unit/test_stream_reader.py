"""The watch's stream reader: the same messages and the same end as grpcio's iterator.

``messages`` reads a single-threaded grpcio stream through the call's internals; these
tests hold it to what iterating the call gives: every message in order, then a clean
stop, the call's own error, or ``CANCELLED`` after a ``cancel()`` from another thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client._transport._stream_reader import (
    messages,
    reads_in_place,
    verified_grpcio,
)
from colossus_agent_client.api.v1alpha1 import run_service_pb2
from fake_worker import FakeWorker, output_event, terminal_event

RUN = "run_1"


def _open(client: colossus.Client) -> Any:
    conn = client._backend.connection()
    return conn.watch_run_encoded(
        run_service_pb2.WatchRunRequest(run_id=RUN), metadata=conn.metadata()
    )


def _sequences(encoded: Iterator[bytes]) -> list[int]:
    return [run_service_pb2.WatchRunResponse.FromString(m).event.sequence for m in encoded]


def test_the_pinned_grpcio_is_read_in_place(fake: FakeWorker, client: colossus.Client) -> None:
    # Guards the saving itself: a grpcio whose internals moved would fall back silently,
    # and so would a grpcio pin moved past VERIFIED_GRPCIO before this suite ran on it.
    fake.b.events[RUN] = [terminal_event(RUN, 1)]
    call = _open(client)
    assert reads_in_place(call)
    list(messages(call))


def test_every_message_in_order_then_a_clean_stop(
    fake: FakeWorker, client: colossus.Client
) -> None:
    fake.b.events[RUN] = [*(output_event(RUN, s) for s in range(1, 200)), terminal_event(RUN, 200)]
    expected = list(_open(client))  # grpcio's own iterator
    call = _open(client)
    read = list(messages(call))
    assert read == expected
    assert _sequences(iter(read)) == list(range(1, 201))
    assert call.code() is grpc.StatusCode.OK


def test_an_error_after_messages_is_the_calls_error(
    fake: FakeWorker, client: colossus.Client
) -> None:
    fake.b.watch_scripts.append(
        [
            ("event", output_event(RUN, 1)),
            ("event", output_event(RUN, 2)),
            ("fail", grpc.StatusCode.RESOURCE_EXHAUSTED, "WATCH_LIMIT"),
        ]
    )
    call = _open(client)
    read = messages(call)
    assert _sequences(next(read) for _ in range(2)) == [1, 2]
    with pytest.raises(grpc.RpcError) as caught:
        next(read)
    assert caught.value is call
    assert call.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_cancel_from_another_thread_ends_the_read(
    fake: FakeWorker, client: colossus.Client
) -> None:
    # Without the cancel the stream would end cleanly after its stall: no error at all.
    fake.b.watch_scripts.append(
        [("event", output_event(RUN, 1)), ("stall", 3.0), ("event", terminal_event(RUN, 2))]
    )
    call = _open(client)
    read = messages(call)
    assert _sequences(iter([next(read)])) == [1]
    canceller = threading.Timer(0.2, call.cancel)
    canceller.start()
    with pytest.raises(grpc.RpcError) as caught:
        next(read)
    canceller.join()
    assert caught.value.code() is grpc.StatusCode.CANCELLED


def test_anything_else_is_read_through_its_own_iterator(
    fake: FakeWorker, client: colossus.Client
) -> None:
    assert not reads_in_place([b"a"])
    assert list(messages([b"a", b"b"])) == [b"a", b"b"]
    # A stream whose messages grpcio decodes keeps grpcio's iterator (and its decoding).
    fake.b.events[RUN] = [terminal_event(RUN, 1)]
    conn = client._backend.connection()
    decoded = conn.channel.unary_stream(
        "/colossus.api.v1alpha1.RunService/WatchRun",
        request_serializer=run_service_pb2.WatchRunRequest.SerializeToString,
        response_deserializer=run_service_pb2.WatchRunResponse.FromString,
    )(run_service_pb2.WatchRunRequest(run_id=RUN), metadata=conn.metadata())
    assert not reads_in_place(decoded)
    assert [r.event.sequence for r in messages(decoded)] == [1]


@pytest.mark.parametrize(
    ("version", "verified"),
    [
        ("1.49.1", True),
        ("1.62.3", True),
        ("1.85.3", True),
        ("1.85.0rc1", True),
        ("1.48.2", False),
        ("1.86.0", False),
        ("2.0.0", False),
        ("dev", False),
    ],
)
def test_only_verified_grpcio_releases_are_read_in_place(version: str, verified: bool) -> None:
    assert verified_grpcio(version) is verified
