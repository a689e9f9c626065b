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
from .handlers.pipeline import ConnectionTable
from .http2.connection_errors import ignore_unknown_frames, send_goaway_on_errors
from .http2.frame_trace import defer_frame_repr
from .http2.header_block import keep_request_headers
from .http2.header_block_bound import bound_header_blocks
from .http2.hpack_memo import memoize_header_blocks
from .http2.stream_errors import reset_malformed_requests
from .http2.stream_limit import refuse_excess_streams
from .worker_hooks import WorkerHooks

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


def _goaway(last_stream_id: int) -> bytes:
    """An HTTP/2 GOAWAY with NO_ERROR: streams above ``last_stream_id`` were not processed."""
    return bytes.fromhex("000008" "07" "00" "00000000") + last_stream_id.to_bytes(4, "big") + bytes(4)


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
        self._coalescing: CoalescingTransport | None = None
        self._closing = False
        slot.proxy = self

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        ssl_object = transport.get_extra_info("ssl_object")
        self._peer = transport.get_extra_info("peername")
        if self._peer is not None:
            self._listener.connections.by_peer[self._peer] = self._conn_id
        transport = _as_transport(transport)
        self._coalescing = CoalescingTransport(transport)
        self._inner.connection_made(self._coalescing)
        keep_request_headers(self._inner)
        send_goaway_on_errors(self._inner)
        ignore_unknown_frames(self._inner)
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
        # Outside the guard above: a conformance rule that failed to install must fail loudly.
        h2 = self._inner.connection._connection
        reset_malformed_requests(h2)
        bound_header_blocks(h2, limits.max_header_bytes)
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
        """Close a connection that finished TLS but did not open a stream in time.

        Otherwise a peer could hold a connection slot without a word (or with only
        the HTTP/2 preface) until the connection's maximum age, and a handful of such
        peers lock every client out. Every client opens its first stream at once.
        """
        self._preface_timer = None
        if self._transport is None or self._closing:
            return
        seconds = self._listener.limits.handshake_timeout_seconds
        if self._received < _PREFACE_BYTES:
            log.info("refused connection %d: no HTTP/2 preface within %.0f s", self._conn_id,
                     seconds, extra={"fields": {
                         "event": "connection_refused", "reason": "preface_timeout"}})
            self._transport.abort()
            return
        if self.ever_opened_a_stream():
            return
        log.info("closed connection %d: no stream within %.0f s", self._conn_id, seconds,
                 extra={"fields": {"event": "connection_closed", "reason": "no_stream"}})
        self.close_idle()

    @property
    def established(self) -> bool:
        """Whether TLS is up and grpclib's protocol took over."""
        return self._transport is not None

    def _h2(self) -> Any:
        return self._inner.connection._connection

    def ever_opened_a_stream(self) -> bool:
        return bool(self._h2().highest_inbound_stream_id)

    def has_open_stream(self) -> bool:
        """Whether a stream is open; ``False`` too while TLS or the preface is still awaited."""
        if self._transport is None or self._early is not None:
            return False
        return bool(self._h2().open_inbound_streams)

    def close_idle(self) -> None:
        """Close a connection without an open stream: GOAWAY (nothing left unprocessed), close.

        A peer that does not read would hold the TLS shutdown open; it is cut off after
        a second (its place was given back already).
        """
        coalescing = self._coalescing
        if coalescing is None or self._closing:
            return
        self._closing = True
        coalescing.write(_goaway(self._h2().highest_inbound_stream_id))
        coalescing.close()
        for timer in (self._age_timer, self._preface_timer):
            if timer is not None:
                timer.cancel()
        self._age_timer = asyncio.get_running_loop().call_later(1.0, coalescing.abort)

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
    it, ``connection_lost`` after either, eviction); each calls :meth:`release`,
    and only the first one counts.
    """

    def __init__(self, listener: Listener, conn_id: int, raw: asyncio.Transport) -> None:
        self._listener: Listener | None = listener
        self.conn_id = conn_id
        self.raw = raw
        self.proxy: _AppProxy | None = None
        self.evicted = False
        listener.open_connections += 1
        listener.slots[conn_id] = self

    def release(self) -> None:
        if self._listener is not None:
            self._listener.open_connections -= 1
            self._listener.slots.pop(self.conn_id, None)
            self._listener.hooks.on_disconnect(self.conn_id)
            self._listener = None

    def evict(self) -> None:
        """Close this connection, which has no open stream, and give its place back now."""
        self.evicted = True
        proxy = self.proxy
        if proxy is not None and proxy.established:
            proxy.close_idle()
        else:  # still in the TLS handshake: the handshake task sees the abort
            self.raw.abort()
        self.release()


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
        # Every connection holding a place, oldest first (dicts keep insertion order).
        self.slots: dict[int, _Slot] = {}
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
        if self.open_connections >= self.limits.max_connections and not self._evict_for(conn_id):
            log.info("refused connection %d: max_connections (%d) reached", conn_id,
                     self.limits.max_connections, extra={"fields": {
                         "event": "connection_refused", "reason": "max_connections"}})
            transport.abort()
            self.hooks.on_connection(conn_id, None, False)
            return
        slot = _Slot(self, conn_id, transport)
        # start_tls's first step (pause reading, swap the protocol) must run before
        # this connection_made returns; see the module docstring.
        task = start_now(self._handshake(conn_id, transport, inner_factory, slot))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _evict_for(self, conn_id: int) -> bool:
        """At the connection cap: close the oldest connection without an open stream.

        A connection only holds its place while it is being used; a new client is
        refused only when every connection has a stream open.
        """
        for slot in self.slots.values():
            if slot.proxy is not None and slot.proxy.has_open_stream():
                continue
            log.info("closed connection %d, the oldest without an open stream, to admit "
                     "connection %d (max_connections reached)", slot.conn_id, conn_id,
                     extra={"fields": {"event": "connection_closed", "reason": "evicted"}})
            slot.evict()
            return True
        return False

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
            if slot.evicted:  # the eviction was logged
                self.hooks.on_connection(conn_id, None, False)
                return
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
        if slot.evicted:  # evicted as the handshake ended; the eviction was logged
            tls_transport.abort()
            self.hooks.on_connection(conn_id, None, False)
            return
        ssl_object = tls_transport.get_extra_info("ssl_object")
        if (ssl_object is None or ssl_object.selected_alpn_protocol() != "h2") \
                and not self.hooks.serve_without_h2():
            # gRPC is HTTP/2 only, and a client that did not negotiate it may be speaking
            # something else on the connection; the handshake itself did complete.
            log.info("refused connection %d: the client did not negotiate HTTP/2 (ALPN h2)",
                     conn_id, extra={"fields": {"event": "connection_refused", "reason": "alpn"}})
            self.hooks.on_connection(
                conn_id, ssl_object.version() if ssl_object is not None else None, True)
            tls_transport.close()
            slot.release()
            return
        proxy.connection_made(tls_transport)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def abort_all(self) -> None:
        """Drop every connection still open, as the process's exit would (its sockets
        close under the peer); for a worker restarted inside its own process."""
        for slot in list(self.slots.values()):
            slot.raw.abort()
            slot.release()
