"""What every RPC goes through before and after its handler.

Order: observe the call (hooks) -> authenticate the bearer -> check the
method's scope -> read the request with the size bound and wire guard ->
``before_unary`` hook -> handler -> ``after_unary_commit`` hook -> reply. Every
exception leaves as a gRPC status with one ``ErrorInfo``; internal details
are logged, never returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grpclib.const import Status
from grpclib.exceptions import GRPCError, StreamTerminatedError
from grpclib.server import Stream

from ..auth import METHOD_SCOPES, require_scope
from ..config import WorkerConfig
from ..credentials import CredentialBook, KnownCredentials, Principal
from ..errors import (
    ApiError,
    JournalIntegrityError,
    StorageUnavailable,
    integrity_failure,
    internal,
    storage_unavailable,
)
from ..http2.header_block import header_list_size, request_header_size
from ..worker_hooks import WorkerHooks
from .reply import send_unary_reply

log = logging.getLogger(__name__)

T = TypeVar("T")


async def _within(seconds: float, work: Awaitable[T]) -> T:
    """``work`` with a deadline, raising ``asyncio.TimeoutError`` when it passes.

    From Python 3.11 a timeout scope runs the read in the calling task; ``wait_for``
    wraps it in a task of its own, an extra task and loop turn on every call.
    """
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await work
    return await asyncio.wait_for(work, seconds)


def _request_complete(stream: Stream[Any, Any]) -> bool:
    """Whether the client already ended its side, so reading the request cannot wait."""
    buffer = getattr(getattr(stream, "_stream", None), "buffer", None)
    return getattr(buffer, "_eof", False) is True


def _known_credentials(stream: Stream[Any, Any]) -> KnownCredentials | None:
    """The connection's memo of proven ``authorization`` values (made on its first call)."""
    connection = getattr(getattr(stream, "_stream", None), "connection", None)
    if connection is None:
        return None
    known = getattr(connection, "colossus_known_credentials", None)
    if not isinstance(known, KnownCredentials):
        known = KnownCredentials()
        try:
            connection.colossus_known_credentials = known
        except AttributeError:
            return None
    return known


@dataclass
class ConnectionTable:
    """Maps a client's address to the listener's connection number."""

    by_peer: dict[Any, int] = field(default_factory=dict)

    def conn_id(self, stream: Stream[Any, Any]) -> int:
        try:
            return self.by_peer.get(stream.peer.addr(), 0)
        except Exception:
            return 0


class Pipeline:
    def __init__(self, config: WorkerConfig, credentials: CredentialBook, hooks: WorkerHooks,
                 connections: ConnectionTable) -> None:
        self.config = config
        self.credentials = credentials
        self.hooks = hooks
        self.connections = connections
        limits = config.limits
        self._decodes = asyncio.Semaphore(limits.decode_permits)
        self._app_decodes: dict[str, asyncio.Semaphore] = {}
        # Hooks left at their no-op defaults are not awaited on every call.
        kind = type(hooks)
        self._plain_on_rpc = kind.on_rpc is WorkerHooks.on_rpc
        self._plain_before = kind.before_unary is WorkerHooks.before_unary
        self._plain_after = kind.after_unary_commit is WorkerHooks.after_unary_commit
        self._plain_replies = kind.alter_reply is WorkerHooks.alter_reply

    async def read(
        self, principal: Principal, stream: Stream[Any, Any], read: Callable[[Stream[Any, Any]], Any]
    ) -> Any:
        """Read one request under the decode permits and the setup deadline.

        Permits are taken after authentication and before any message byte is
        read, so unauthenticated peers cannot hold them. The application's own
        permit comes first: a call queued behind its application's other calls
        must not sit on a global permit that other applications need.
        """
        limits = self.config.limits
        app = self._app_decodes.get(principal.application_id)
        if app is None:
            app = self._app_decodes[principal.application_id] = asyncio.Semaphore(
                limits.decode_permits_per_application)
        async with app, self._decodes:
            if _request_complete(stream):
                # Every byte is buffered: the read finishes without waiting, so
                # the setup deadline (a timer per call) has nothing to bound.
                return await read(stream)
            try:
                return await _within(limits.request_setup_timeout_seconds, read(stream))
            except asyncio.TimeoutError:
                raise ApiError(
                    Status.UNAVAILABLE, "UNAVAILABLE", "the request message did not arrive in time"
                ) from None

    def authenticate(self, stream: Stream[Any, Any], method: str) -> Principal:
        """Observe, bound, authenticate and scope-check one call (raises ApiError)."""
        metadata = stream.metadata
        values: list[str] = []
        header_bytes = request_header_size(stream)
        if metadata is not None:
            values = [v if isinstance(v, str) else "" for v in metadata.getall("authorization", [])]
            if header_bytes is None:  # no listener kept the block: count what is left
                header_bytes = header_list_size(metadata.items())
        if not self._plain_on_rpc:
            self.hooks.on_rpc(self.connections.conn_id(stream), method, bool(values))
        if header_bytes is not None and header_bytes > self.config.limits.max_header_bytes:
            raise ApiError(Status.RESOURCE_EXHAUSTED, "REQUEST_TOO_LARGE",
                           "the request headers are too large", {"limit": "max_header_bytes"})
        try:
            if len(values) > 1:
                raise ApiError(  # ambiguous credentials are never guessed at
                    Status.UNAUTHENTICATED, "CREDENTIAL_INVALID", "the credential is not valid"
                )
            principal = self.credentials.authenticate(values[0] if values else None,
                                                      _known_credentials(stream))
            require_scope(principal, METHOD_SCOPES.get(method))
        except ApiError as exc:
            # The reason code and method only: never the presented credential.
            log.info("refused %s: %s (%s)", method, exc.reason, exc.message, extra={"fields": {
                "event": "credential_refused", "method": method, "reason": exc.reason}})
            raise
        return principal

    @contextlib.contextmanager
    def errors(self, method: str) -> Iterator[None]:
        """Translate anything raised inside into a public gRPC status."""
        try:
            yield
        except Exception as exc:
            public = _public_error(method, exc)
            if public is exc:
                raise
            raise public from None


    async def unary(
        self,
        stream: Stream[Any, Any],
        method: str,
        read: Callable[[Stream[Any, Any]], Any],
        handle: Callable[[Principal, Any], Any],
    ) -> None:
        # The body of ``errors`` inline: a generator-based context manager per
        # call is a measurable share of a poll.
        try:
            principal = self.authenticate(stream, method)
            request = await self.read(principal, stream, read)
            if not self._plain_before:
                await self.hooks.before_unary(method)
            reply = handle(principal, request)
            if inspect.iscoroutine(reply):  # an async handler
                reply = await reply
            if not self._plain_after:
                await self.hooks.after_unary_commit(method)
            if not self._plain_replies:
                reply = self.hooks.alter_reply(method, request, reply)
        except Exception as exc:
            public = _public_error(method, exc)
            if public is exc:
                raise
            raise public from None
        await send_unary_reply(stream, reply)

    async def server_stream(
        self,
        stream: Stream[Any, Any],
        method: str,
        read: Callable[[Stream[Any, Any]], Any],
        open_stream: Callable[[Principal, Any], AsyncIterator[Any]],
    ) -> None:
        with self.errors(method):
            principal = self.authenticate(stream, method)
            request = await self.read(principal, stream, read)
            replies = open_stream(principal, request)
            if method != "RunService/WatchRun":  # watches have wrap_watch
                replies = self.hooks.wrap_replies(method, replies)
            async for reply in replies:
                await stream.send_message(reply)


def _public_error(method: str, exc: Exception) -> BaseException:
    """What leaves a handler for ``exc``: a gRPC status, or ``exc`` itself where it is one.

    Internal details are logged here and never returned.
    """
    if isinstance(exc, ApiError):
        return exc.to_grpc()
    if isinstance(exc, (GRPCError, StreamTerminatedError)):
        return exc
    if isinstance(exc, JournalIntegrityError):
        log.error("%s: journal integrity check failed", method)
        return integrity_failure().to_grpc()
    if isinstance(exc, StorageUnavailable):
        log.error("%s: the journal cannot be written: %s", method, exc)
        return storage_unavailable(exc).to_grpc()
    log.exception("%s: unexpected failure", method, exc_info=exc)
    return internal().to_grpc()
