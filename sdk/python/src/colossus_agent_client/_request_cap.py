"""C7, the advertised request cap, applied where every request leaves the SDK.

Every stub and hand-built method of a connection is made from a :class:`CappedChannel`,
so every request message, unary or streamed, sync or asyncio, is measured against the
cap of the connection's current ``ServerInfo`` before grpcio sees it. A call site cannot
forget the check, and a new RPC gets it without a line of its own.

Why not a grpcio client interceptor: ``grpc.intercept_channel`` wraps the call objects it
returns, which turns off the watch's in-place reader (``_transport/_stream_reader.py``
reads only grpcio's own call type), and every interceptor adds per-call work. Wrapping
the channel's four method factories instead hands grpcio's own call objects back
untouched, for the cost of one Python call per RPC.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import grpc
import grpc.aio
from google.protobuf.message import Message

from . import _models as m
from ._errors import ResourceExhaustedError


class RequestCap:
    """The ``ServerInfo`` whose cap applies; None until ``GetServerInfo`` answered."""

    __slots__ = ("info",)

    def __init__(self, info: m.ServerInfo | None = None) -> None:
        self.info = info

    def check(self, request: Message) -> None:
        """Raises ``REQUEST_TOO_LARGE`` when ``request`` is over the advertised cap."""
        info = self.info
        if info is None:
            return
        cap = info.limits.max_request_bytes
        if cap and request.ByteSize() > cap:
            raise ResourceExhaustedError(
                f"the request is {request.ByteSize()} bytes, over the worker's limit of {cap}",
                reason="REQUEST_TOO_LARGE",
                metadata={"limit": str(cap)},
            )


class _OneRequest:
    """A unary-request method (unary-unary or unary-stream), checked per call."""

    __slots__ = ("_cap", "_method")

    def __init__(self, method: Any, cap: RequestCap) -> None:
        self._method = method
        self._cap = cap

    def __call__(self, request: Message, *args: Any, **kwargs: Any) -> Any:
        self._cap.check(request)
        return self._method(request, *args, **kwargs)

    def future(self, request: Message, *args: Any, **kwargs: Any) -> Any:
        """grpcio's ``future`` of a sync unary call (the connect's cancellable
        ``GetServerInfo``), checked like a call."""
        self._cap.check(request)
        return self._method.future(request, *args, **kwargs)


class _RequestStream:
    """A client-streaming method: all messages are checked before the call starts.

    Checking while grpcio pulls the iterator would be too late (earlier messages would
    already be on the wire) and grpcio would replace the error by its own CANCELLED, so
    the messages are collected first; the SDK's only such call, an upload, holds them
    all in memory anyway.
    """

    __slots__ = ("_cap", "_method")

    def __init__(self, method: Any, cap: RequestCap) -> None:
        self._method = method
        self._cap = cap

    def __call__(self, requests: Iterable[Message], *args: Any, **kwargs: Any) -> Any:
        messages = tuple(requests)
        for message in messages:
            self._cap.check(message)
        return self._method(iter(messages), *args, **kwargs)


class CappedChannel:
    """A grpcio channel (sync or asyncio) whose methods all check the request cap.

    Only the four method factories are offered, and their methods only ``__call__`` and,
    for a unary request, a ``future`` checked the same way (no ``with_call``, nothing that
    could go around the check): stubs and the SDK's hand-built methods need nothing else,
    and the connection keeps the real channel for its lifecycle.
    """

    __slots__ = ("_cap", "_channel")

    def __init__(self, channel: Any, cap: RequestCap) -> None:
        self._channel = channel
        self._cap = cap

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _OneRequest(self._channel.unary_unary(method, *args, **kwargs), self._cap)

    def unary_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _OneRequest(self._channel.unary_stream(method, *args, **kwargs), self._cap)

    def stream_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _RequestStream(self._channel.stream_unary(method, *args, **kwargs), self._cap)

    def stream_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _RequestStream(self._channel.stream_stream(method, *args, **kwargs), self._cap)


def capped(channel: grpc.Channel, cap: RequestCap) -> grpc.Channel:
    """``channel`` as the stubs take it, every request checked against ``cap``."""
    return cast(grpc.Channel, CappedChannel(channel, cap))


def capped_async(channel: grpc.aio.Channel, cap: RequestCap) -> grpc.aio.Channel:
    """The asyncio twin of :func:`capped`."""
    return cast(grpc.aio.Channel, CappedChannel(channel, cap))
