"""The runner's reference client: generated messages over a plain HTTP/2 gRPC channel.

The server suite judges what a worker puts on the wire, so its client adds nothing of
its own: no dedup, no retries, no local refusals (an SDK would hide exactly the bugs the
cases look for). Messages are the Python SDK's generated bindings; ``RawBytes`` sends and
receives bytes no SDK would produce. TLS is 1.3 only with ALPN ``h2``; the pin and the
certificate count are checked by ``tls_probe`` when a worker starts.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpclib.client import Channel
from grpclib.const import Cardinality, Status
from grpclib.encoding.base import StatusDetailsCodecBase
from grpclib.exceptions import GRPCError, StreamTerminatedError

DOMAIN = "colossus.api.v1alpha1"
PACKAGE = "/colossus.api.v1alpha1."
CALL_SECONDS = 15.0

T = TypeVar("T")


@dataclass(frozen=True)
class RpcError(Exception):
    """A gRPC status as the worker sent it, with the decoded ErrorInfo and RetryInfo."""

    code: str
    message: str = ""
    reason: str = ""
    domain: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    retry_delay: float | None = None

    def __str__(self) -> str:
        return f"{self.code}/{self.reason or '-'}: {self.message}"


class _Details(StatusDetailsCodecBase):
    """Decodes ``grpc-status-details-bin`` into ErrorInfo and RetryInfo fields."""

    def encode(self, status: Status, message: str | None, details: Any) -> bytes:
        raise NotImplementedError

    def decode(self, status: Status, message: str | None, data: bytes) -> Any:
        decoded: dict[str, Any] = {}
        parsed = status_pb2.Status.FromString(data)
        for detail in parsed.details:
            info = error_details_pb2.ErrorInfo()
            retry = error_details_pb2.RetryInfo()
            if detail.Unpack(info):
                decoded.update(reason=info.reason, domain=info.domain, metadata=dict(info.metadata))
            elif detail.Unpack(retry):
                decoded["retry_delay"] = retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
        return decoded


class RawBytes:
    """A 'message' that is exactly the bytes given: for hostile requests and exact replays."""

    def __init__(self, data: bytes = b""):
        self.data = data

    def SerializeToString(self) -> bytes:
        return self.data

    @classmethod
    def FromString(cls, data: bytes) -> RawBytes:
        return cls(data)


def error_from(exc: GRPCError | StreamTerminatedError) -> RpcError:
    if isinstance(exc, StreamTerminatedError):
        return RpcError(code="STREAM_TERMINATED", message=str(exc))
    details = exc.details if isinstance(exc.details, dict) else {}
    return RpcError(code=exc.status.name, message=exc.message or "", **details)


def tls13_context() -> ssl.SSLContext:
    """TLS 1.3 only, ALPN h2; the leaf is judged by its pin (tls_probe), not a CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    return context


class Api:
    """One HTTP/2 connection to the worker, authenticated as one application (or none)."""

    def __init__(self, host: str, port: int, bearer: str | None):
        self.channel = Channel(host, port, ssl=tls13_context(), status_details_codec=_Details())
        self.bearer = bearer

    def close(self) -> None:
        self.channel.close()

    def _metadata(self, extra: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
        base = [("authorization", f"Bearer {self.bearer}")] if self.bearer is not None else []
        return [*base, *extra]

    async def unary(
        self,
        method: str,
        request: Message | RawBytes,
        reply: type[T],
        metadata: Sequence[tuple[str, str]] = (),
        timeout: float = CALL_SECONDS,
    ) -> T:
        """``method`` is ``Service/Method``; raises ``RpcError`` for any non-OK status."""
        try:
            async with self.channel.request(
                PACKAGE + method,
                Cardinality.UNARY_UNARY,
                type(request),
                reply,
                timeout=timeout,
                metadata=self._metadata(metadata),
            ) as stream:
                await stream.send_message(request, end=True)
                answer = await stream.recv_message()
                await stream.recv_trailing_metadata()
        except (GRPCError, StreamTerminatedError) as exc:
            raise error_from(exc) from None
        if answer is None:
            raise RpcError(code="NO_MESSAGE", message="OK without a response message")
        return answer

    async def server_stream(
        self, method: str, request: Message | RawBytes, reply: type[T], timeout: float = CALL_SECONDS
    ) -> AsyncIterator[T]:
        """Yields each message; a non-OK status at the end raises ``RpcError``."""
        try:
            async with self.channel.request(
                PACKAGE + method,
                Cardinality.UNARY_STREAM,
                type(request),
                reply,
                timeout=timeout,
                metadata=self._metadata(),
            ) as stream:
                await stream.send_message(request, end=True)
                async for message in stream:
                    yield message
                await stream.recv_trailing_metadata()
        except (GRPCError, StreamTerminatedError) as exc:
            raise error_from(exc) from None

    async def client_stream(
        self, method: str, requests: Sequence[Message], reply: type[T], timeout: float = CALL_SECONDS
    ) -> T:
        """Sends every request, then half-closes; raises ``RpcError`` for a non-OK status."""
        request_type = type(requests[0])
        try:
            async with self.channel.request(
                PACKAGE + method,
                Cardinality.STREAM_UNARY,
                request_type,
                reply,
                timeout=timeout,
                metadata=self._metadata(),
            ) as stream:
                for request in requests:
                    await stream.send_message(request)
                await stream.end()
                answer = await stream.recv_message()
                await stream.recv_trailing_metadata()
        except (GRPCError, StreamTerminatedError) as exc:
            raise error_from(exc) from None
        if answer is None:
            raise RpcError(code="NO_MESSAGE", message="OK without a response message")
        return answer
