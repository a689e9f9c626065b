"""Extension points the server plumbing calls around the RPC handlers.

The worker itself never misbehaves. Fault injection (W15), observation of
connections and similar test-only behaviour live in a separate module that
subclasses :class:`WorkerHooks` and is passed to the server at start-up. The
handlers never see this object: only the listener, the request pipeline and
the watch plumbing in ``server.py`` call it. Every default is a no-op, so a
worker started without hooks behaves exactly as in production.

All methods must be cheap and must never raise unless their docstring says
raising is the intended way to inject a failure.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._gen.colossus.api.v1alpha1 import RunEvent, ServerInfo


@dataclass(frozen=True, slots=True)
class WatchContext:
    """What the plumbing knows about one ``WatchRun`` call.

    ``call_index`` counts WatchRun calls since the worker started (1-based);
    a hook that wants per-case numbering keeps its own counter.
    """

    call_index: int
    application_id: str
    run_id: str
    after_sequence: int


class WorkerHooks:
    """No-op hooks. Subclass and override what you need."""

    def on_accept(self, conn_id: int) -> None:
        """A TCP connection was accepted, before anything is decided about it.

        Exactly one :meth:`on_connection` for the same ``conn_id`` follows, once the
        connection is refused or its TLS handshake ends (unless the worker stops first).
        """

    def on_connection(self, conn_id: int, tls_version: str | None, handshake_ok: bool) -> None:
        """A TCP connection was accepted and its TLS handshake finished or failed.

        ``tls_version`` is the negotiated protocol name (``"TLSv1.3"``) or
        ``None`` when the handshake failed. Called once per connection. A connection
        closed right after its handshake for not negotiating ALPN ``h2`` reports the
        handshake as finished (it did).
        """

    def on_disconnect(self, conn_id: int) -> None:
        """A connection accepted with :meth:`on_accept` gave its place back: it is closed
        (or closing, with nothing more to read). Called at most once per connection."""

    def serve_without_h2(self) -> bool:
        """Whether to serve HTTP/2 on a connection whose TLS handshake agreed to no ``h2``
        through ALPN, instead of closing it. Default: never (gRPC is HTTP/2 only)."""
        return False

    def drop_connection(self) -> bool:
        """Whether to close a just-accepted TCP connection before any TLS byte.

        A worker that accepts and then closes looks, from the client, like a
        listener that died mid-handshake; the client must not mistake it for a
        TLS policy refusal. Default: never.
        """
        return False

    def on_rpc(self, conn_id: int, method: str, bearer_presented: bool) -> None:
        """A request arrived, before authentication.

        ``method`` is ``"<Service>/<Method>"`` without the package, for
        example ``"RunService/CreateRun"``. ``bearer_presented`` says whether
        an ``authorization`` header was present at all; the value itself is
        never passed to hooks. ``conn_id`` is ``0`` when unknown.
        """

    def server_info(self, info: ServerInfo) -> ServerInfo:
        """Return the ``ServerInfo`` to send; may replace fields. Default: unchanged."""
        return info

    async def before_unary(self, method: str) -> None:
        """Awaited after authentication, before a unary handler runs.

        Raise :class:`colossus_reference_worker.errors.ApiError` to fail the
        call without doing any work.
        """

    async def after_unary_commit(self, method: str) -> None:
        """Awaited after a unary handler committed its work, before the reply is sent.

        Raise :class:`colossus_reference_worker.errors.ApiError` to fail the
        call although its effect is durable (an "outcome unknown" reply).
        """

    def alter_reply(self, method: str, request: Any, reply: Any) -> Any:
        """Return the reply of a unary call (or an upload) to send. Default: unchanged.

        ``request`` is the decoded request (``None`` for a client stream).
        """
        return reply

    def wrap_replies(self, method: str, replies: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Transform the replies of a server stream other than ``WatchRun``. Default: unchanged."""
        return replies

    def wrap_watch(
        self, ctx: WatchContext, events: AsyncIterator[RunEvent]
    ) -> AsyncIterator[RunEvent]:
        """Transform the event stream of one ``WatchRun`` call.

        The returned iterator is what the client receives. It may repeat,
        drop, alter or delay events, stop early (clean close) or raise
        :class:`colossus_reference_worker.errors.ApiError` (stream failure).
        Default: the stream unchanged.
        """
        return events

    def on_watch(self, ctx: WatchContext) -> None:
        """A ``WatchRun`` call passed authentication and is about to stream."""

    def ssl_context_for_listener(self, default: ssl.SSLContext, **material: Any) -> ssl.SSLContext:
        """Return the TLS context the listener serves with.

        ``default`` is the genuine TLS 1.3-only context. ``material`` carries
        ``certificate_pem`` and ``private_key_pem`` (bytes) of the genuine
        leaf, and ``host`` (the loopback literal), for hooks that build a
        deliberately wrong listener. Default: ``default``.
        """
        return default


NO_HOOKS = WorkerHooks()
