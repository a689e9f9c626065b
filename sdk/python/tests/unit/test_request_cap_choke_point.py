"""C7 at the choke point: every method a connection can send checks the request cap.

The connection is built over a recording channel. Every method it holds (the generated
stubs and its hand-built ones) is found by walking its attributes, and each is called
with a request over the cap: all must refuse it before the channel sees it. A method made
straight from the channel, without the check, is found by the same walk and fails the
test, and so does a method of the contract (read from the generated descriptors) that no
checked method covers.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import message_factory

import colossus_agent_client as colossus
from colossus_agent_client import _models as m
from colossus_agent_client._connection import AsyncConnection, SyncConnection
from colossus_agent_client._convert import server_info
from colossus_agent_client._request_cap import RequestCap
from colossus_agent_client.api.v1alpha1 import (
    artifacts_pb2,
    run_service_pb2,
    runs_pb2,
    system_pb2,
)
from fake_worker import limits

CONTRACT: tuple[ModuleType, ...] = (artifacts_pb2, run_service_pb2, runs_pb2, system_pb2)
CAP = 64
# An unknown field (number 1000, 100 bytes): every message type carries it, so even a
# request with no fields of its own can be made larger than the cap.
OVERSIZED = b"\xc2\x3e\x64" + b"x" * 100


def _info(max_request_bytes: int) -> m.ServerInfo:
    return server_info(
        system_pb2.ServerInfo(
            instance_id="inst_cap",
            api_package="colossus.api.v1alpha1",
            api_version="v1alpha1",
            api_major=1,
            limits=limits(max_request_bytes=max_request_bytes),
        )
    )


def contract_methods() -> dict[str, Any]:
    """``/package.Service/Method`` -> the method's request class, for every service."""
    found: dict[str, Any] = {}
    for module in CONTRACT:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                request = message_factory.GetMessageClass(method.input_type)
                found[f"/{service.full_name}/{method.name}"] = request
    return found


class _Raw:
    """A method as the channel made it; calling it records a send."""

    def __init__(self, channel: RecordingChannel, path: str, kind: str) -> None:
        self.channel, self.path, self.kind = channel, path, kind

    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> str:
        messages = list(request) if self.kind.startswith("stream") else [request]
        self.channel.sent.append((self.path, messages))
        return "sent"


class RecordingChannel:
    def __init__(self) -> None:
        self.sent: list[tuple[str, list[Any]]] = []

    def _method(self, kind: str, path: str, *args: Any, **kwargs: Any) -> _Raw:
        return _Raw(self, path, kind)

    def unary_unary(self, path: str, *args: Any, **kwargs: Any) -> _Raw:
        return self._method("unary_unary", path)

    def unary_stream(self, path: str, *args: Any, **kwargs: Any) -> _Raw:
        return self._method("unary_stream", path)

    def stream_unary(self, path: str, *args: Any, **kwargs: Any) -> _Raw:
        return self._method("stream_unary", path)

    def stream_stream(self, path: str, *args: Any, **kwargs: Any) -> _Raw:
        return self._method("stream_stream", path)


def _connection(kind: type[SyncConnection] | type[AsyncConnection], cap: int) -> Any:
    channel = RecordingChannel()
    conn = kind(None, None, None, _info(cap), channel)  # type: ignore[arg-type]
    return conn, channel


def _methods(conn: Any) -> Iterator[tuple[str, Any]]:
    """Every method reachable from the connection: its own attributes and its stubs'."""
    for name, value in vars(conn).items():
        if name == "channel":
            continue
        inner = getattr(value, "_method", None)
        if isinstance(value, _Raw) or isinstance(inner, _Raw):
            yield name, value
        elif type(value).__name__.endswith("Stub"):
            for method_name, method in vars(value).items():
                yield f"{name}.{method_name}", method


def _path(method: Any) -> str:
    raw = method if isinstance(method, _Raw) else method._method
    assert isinstance(raw, _Raw)
    return raw.path


def _oversized(request_class: Any) -> Any:
    request = request_class()
    request.MergeFromString(OVERSIZED)
    assert request.ByteSize() > CAP
    return request


@pytest.mark.parametrize("kind", [SyncConnection, AsyncConnection])
def test_every_method_refuses_a_request_over_the_cap_before_sending(
    kind: type[SyncConnection] | type[AsyncConnection],
) -> None:
    conn, channel = _connection(kind, CAP)
    requests = contract_methods()
    covered = set()
    for name, method in _methods(conn):
        assert not isinstance(method, _Raw), f"{name} is sent without the request cap check"
        path = _path(method)
        request = _oversized(requests[path])
        kind_of = method._method.kind
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            method([request] if kind_of.startswith("stream") else request)
        assert caught.value.reason == "REQUEST_TOO_LARGE", name
        assert caught.value.metadata == {"limit": str(CAP)}
        assert caught.value.code is None
        covered.add(path)
    assert channel.sent == []
    assert covered == set(requests), "a contract method the connection cannot send"


@pytest.mark.parametrize("kind", [SyncConnection, AsyncConnection])
def test_every_method_sends_a_request_of_exactly_the_cap(
    kind: type[SyncConnection] | type[AsyncConnection],
) -> None:
    conn, channel = _connection(kind, 0)
    requests = contract_methods()
    for _, method in _methods(conn):
        request = _oversized(requests[_path(method)])
        conn.server_info = _info(request.ByteSize())
        streamed = method._method.kind.startswith("stream")
        assert method([request] if streamed else request) == "sent"
    assert len(channel.sent) == len(list(_methods(conn)))


def test_a_streamed_call_sends_nothing_when_a_later_message_is_over_the_cap() -> None:
    conn, channel = _connection(SyncConnection, CAP)
    small = artifacts_pb2.UploadArtifactRequest(chunk=b"x" * 10)
    large = artifacts_pb2.UploadArtifactRequest(chunk=b"x" * CAP)
    with pytest.raises(colossus.ResourceExhaustedError):
        conn.artifacts.UploadArtifact(iter([small, small, large]))
    assert channel.sent == []
    assert conn.artifacts.UploadArtifact(iter([small, small])) == "sent"
    assert channel.sent[0][1] == [small, small]


def test_the_cap_follows_the_connections_current_server_info() -> None:
    conn, channel = _connection(SyncConnection, CAP)
    request = _oversized(run_service_pb2.GetRunRequest)
    with pytest.raises(colossus.ResourceExhaustedError):
        conn.runs.GetRun(request)
    conn.server_info = _info(0)  # no cap advertised
    assert conn.runs.GetRun(request) == "sent"
    conn.server_info = _info(request.ByteSize() - 1)
    with pytest.raises(colossus.ResourceExhaustedError) as caught:
        conn.runs.GetRun(request)
    assert caught.value.metadata == {"limit": str(request.ByteSize() - 1)}
    assert len(channel.sent) == 1


def test_no_cap_applies_before_server_info_answered() -> None:
    RequestCap().check(_oversized(system_pb2.GetServerInfoRequest))
    with pytest.raises(colossus.ResourceExhaustedError):
        RequestCap(_info(CAP)).check(_oversized(system_pb2.GetServerInfoRequest))
