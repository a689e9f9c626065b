"""The TLS listener (W1): accepts TCP, runs the TLS 1.3 handshake itself, counts connections.

Running ``start_tls`` per connection (instead of handing an SSL context to
``create_server``) lets the worker bound the handshake time, refuse
connections beyond the limit, and tell the hooks about failed handshakes.

It serves on asyncio's loop and on uvloop alike. uvloop's transports are not
``asyncio.Transport`` subclasses (only the same methods), and uvloop starts
reading once ``connection_made`` returns even if the protocol paused, so the
upgrade to TLS begins inside ``connection_made`` (see ``eager_start``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any, cast

from h2.settings import SettingCodes

from .config import Limits
from .eager_start import start_now
from .frame_trace import defer_frame_repr
from .handlers.pipeline import ConnectionTable
from .header_block import keep_request_headers
from .hooks import WorkerHooks
from .hpack_memo import memoize_header_blocks
from .stream_limit import refuse_excess_streams

log = logging.getLogger(__name__)


# Queued bytes that are written at once rather than at the end of the loop turn.
FLUSH_AT_BYTES = 64 * 1024


class CoalescingTransport(asyncio.Transport):
    """Gathers the writes of one event-loop turn into a few large TLS writes.

    grpclib writes every HTTP/2 frame separately; a watch replay sends
    thousands of small frames in a burst, and one syscall per frame dominated
    its cost. Writes are queued and flushed on the next loop turn, so latency
    is unchanged, or as soon as ``FLUSH_AT_BYTES`` are queued: a replay whose
    flow-control window is wide open is encoded in one turn, and the client
    should be reading its first events while the rest are still encoded.
    """

    def __init__(self, inner: asyncio.Transport) -> None:
        super().__init__()
        self._inner = inner
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._loop = asyncio.get_running_loop()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))
        self._pending_bytes += len(data)
        if self._pending_bytes >= FLUSH_AT_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending and not self._inner.is_closing():
            self._inner.write(b"".join(self._pending))
        self._pending.clear()
        self._pending_bytes = 0

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def close(self) -> None:
        self._flush()
        self._inner.close()

    def abort(self) -> None:
        self._pending.clear()
        self._pending_bytes = 0
        self._inner.abort()

    def is_closing(self) -> bool:
        return self._inner.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._inner.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self._inner.get_write_buffer_size() + self._pending_bytes

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._inner.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._inner.pause_reading()

    def resume_reading(self) -> None:
        self._inner.resume_reading()

    def is_reading(self) -> bool:
        return self._inner.is_reading()

    def can_write_eof(self) -> bool:
        return False

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._inner.get_protocol()


_RETIRE_GRACE_SECONDS = 30.0
# The HTTP/2 client preface (24 bytes) and the header of the SETTINGS frame that must follow.
_PREFACE_BYTES = 24 + 9
# HTTP/2 GOAWAY on stream 0: last stream ID 2^31-1, error NO_ERROR.
_GOAWAY_ANY_STREAM = bytes.fromhex("000008" "07" "00" "00000000" "7fffffff" "00000000")


class _AppProxy(asyncio.Protocol):
    """Wraps grpclib's protocol to learn when a TLS session is up and when it ends."""

    def __init__(self, listener: Listener, conn_id: int, inner: Any, slot: _Slot) -> None:
        self._listener = listener
        self._conn_id = conn_id
        self._inner = inner
        self._slot = slot
        self._peer: Any = None
        self._age_timer: asyncio.TimerHandle | None = None
        self._transport: asyncio.Transport | None = None
        # ``start_tls`` does not call connection_made; bytes that arrive before
        # we do so ourselves are held here.
        self._early: list[bytes] | None = []
        self._received = 0
        self._preface_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        ssl_object = transport.get_extra_info("ssl_object")
        self._peer = transport.get_extra_info("peername")
        if self._peer is not None:
            self._listener.connections.by_peer[self._peer] = self._conn_id
        transport = _as_transport(transport)
        self._inner.connection_made(CoalescingTransport(transport))
        keep_request_headers(self._inner)
        limits = self._listener.limits
        with contextlib.suppress(Exception):
            h2 = self._inner.connection._connection
            # The header limit is enforced per request in the pipeline, where an
            # oversized block gets a proper gRPC error; h2 keeps its own 64 KiB
            # connection-level ceiling for anything larger.
            h2.update_settings({
                SettingCodes.MAX_CONCURRENT_STREAMS: limits.max_concurrent_streams_per_connection,
            })
            self._inner.connection.flush()
            refuse_excess_streams(h2)
            memoize_header_blocks(h2)
        self._transport = transport
        loop = asyncio.get_running_loop()
        self._age_timer = loop.call_later(limits.max_connection_age_seconds, self._retire)
        self._preface_timer = loop.call_later(limits.handshake_timeout_seconds,
                                              self._require_preface)
        version = ssl_object.version() if ssl_object is not None else None
        self._listener.hooks.on_connection(self._conn_id, version, True)
        early, self._early = self._early or [], None
        for chunk in early:
            self._inner.data_received(chunk)

    def _require_preface(self) -> None:
        """Close a connection that finished TLS but did not start speaking HTTP/2.

        Otherwise a peer could hold a connection slot without a word until the
        connection's maximum age, and a handful of such peers lock every client out.
        """
        self._preface_timer = None
        if self._received >= _PREFACE_BYTES or self._transport is None:
            return
        log.info("refused connection %d: no HTTP/2 preface within %.0f s", self._conn_id,
                 self._listener.limits.handshake_timeout_seconds, extra={"fields": {
                     "event": "connection_refused", "reason": "preface_timeout"}})
        self._transport.abort()

    def _retire(self, deadline: float | None = None) -> None:
        """Past the maximum age: ask the client to move on, then close when idle.

        A GOAWAY naming the largest possible stream ID tells the client to open
        new calls on a fresh connection while every call already sent is still
        served (the first phase of HTTP/2's graceful shutdown; h2 itself stays
        unaware, so it keeps processing those streams). The connection closes
        once no stream is open, or after a grace period.
        """
        loop = asyncio.get_running_loop()
        if deadline is None:
            log.debug("connection %d reached its maximum age", self._conn_id)
            deadline = loop.time() + _RETIRE_GRACE_SECONDS
            with contextlib.suppress(Exception):
                self._inner.connection._transport.write(_GOAWAY_ANY_STREAM)
            # Calls the client sent before it read the GOAWAY are still arriving;
            # loopback round trips are far shorter than this pause.
            self._age_timer = loop.call_later(1.0, self._retire, deadline)
            return
        streams = getattr(getattr(self._inner, "processor", None), "streams", None)
        if not streams or loop.time() >= deadline:
            if self._transport is not None:
                self._transport.close()
            return
        self._age_timer = loop.call_later(0.2, self._retire, deadline)

    def data_received(self, data: bytes) -> None:
        self._received += len(data)
        if self._early is not None:
            self._early.append(data)
        else:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return None

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._age_timer, self._preface_timer):
            if timer is not None:
                timer.cancel()
        self._listener.connections.by_peer.pop(self._peer, None)
        self._slot.release()
        if self._early is None:
            self._inner.connection_lost(exc)


class _Slot:
    """One connection's place under the connection limit, given back exactly once.

    A connection can end along several paths (failed handshake, peer gone during
    it, ``connection_lost`` after either); each calls :meth:`release`, and only
    the first one counts.
    """

    def __init__(self, listener: Listener) -> None:
        self._listener: Listener | None = listener
        listener.open_connections += 1

    def release(self) -> None:
        if self._listener is not None:
            self._listener.open_connections -= 1
            self._listener = None


def _as_transport(transport: asyncio.BaseTransport) -> asyncio.Transport:
    """A stream transport, typed as one: uvloop's have the methods but not the base class."""
    return cast(asyncio.Transport, transport)


class _Gate(asyncio.Protocol):
    """The plain TCP side: decide on the connection, then hand it to ``start_tls`` at once.

    The gate never sees a byte: on asyncio reading stays paused until the TLS
    protocol resumes it, and on uvloop (which reads as soon as
    ``connection_made`` returns) the TLS protocol is already in place by then.
    """

    def __init__(self, listener: Listener, inner_factory: Callable[[], Any]) -> None:
        self._listener = listener
        self._inner_factory = inner_factory

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = _as_transport(transport)
        transport.pause_reading()
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._listener.accept(transport, self._inner_factory)

    def data_received(self, data: bytes) -> None:  # never: start_tls swaps the protocol first
        pass


class Listener:
    def __init__(self, ctx: ssl.SSLContext, limits: Limits, hooks: WorkerHooks,
                 connections: ConnectionTable) -> None:
        self.ctx = ctx
        self.limits = limits
        self.hooks = hooks
        self.connections = connections
        self.open_connections = 0
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        defer_frame_repr()

    def factory(self, inner_factory: Callable[[], Any]) -> _Gate:
        return _Gate(self, inner_factory)

    def accept(self, transport: asyncio.Transport, inner_factory: Callable[[], Any]) -> None:
        conn_id = next(self._ids)
        log.debug("connection %d accepted", conn_id)
        self.hooks.on_accept(conn_id)
        if self.hooks.drop_connection():
            log.info("closed connection %d before the TLS handshake (fault)", conn_id,
                     extra={"fields": {"event": "connection_refused", "reason": "silent_close"}})
            transport.close()
            self.hooks.on_connection(conn_id, None, False)
            return
        if self.open_connections >= self.limits.max_connections:
            log.info("refused connection %d: max_connections (%d) reached", conn_id,
                     self.limits.max_connections, extra={"fields": {
                         "event": "connection_refused", "reason": "max_connections"}})
            transport.abort()
            self.hooks.on_connection(conn_id, None, False)
            return
        slot = _Slot(self)
        # start_tls's first step (pause reading, swap the protocol) must run before
        # this connection_made returns; see the module docstring.
        task = start_now(self._handshake(conn_id, transport, inner_factory, slot))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handshake(self, conn_id: int, transport: asyncio.Transport,
                         inner_factory: Callable[[], Any], slot: _Slot) -> None:
        loop = asyncio.get_running_loop()
        proxy = _AppProxy(self, conn_id, inner_factory(), slot)
        try:
            tls_transport = await loop.start_tls(
                transport, proxy, self.ctx, server_side=True,
                ssl_handshake_timeout=self.limits.handshake_timeout_seconds,
            )
        except (OSError, ssl.SSLError, asyncio.TimeoutError, ConnectionError) as exc:
            reason = "handshake_timeout" if isinstance(exc, asyncio.TimeoutError) else "tls"
            log.info("refused connection %d: TLS handshake failed (%s)", conn_id,
                     getattr(exc, "reason", None) or type(exc).__name__, extra={"fields": {
                         "event": "connection_refused", "reason": reason}})
            slot.release()
            transport.abort()
            self.hooks.on_connection(conn_id, None, False)
            return
        except asyncio.CancelledError:
            slot.release()
            transport.abort()
            raise
        if tls_transport is None:  # the peer went away during the handshake
            slot.release()
            self.hooks.on_connection(conn_id, None, False)
            return
        proxy.connection_made(tls_transport)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
