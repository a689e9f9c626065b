"""The trust relay: every connection grpcio opens passes the TLS 1.3 checks first (C4).

grpcio's Python API can neither require TLS 1.3 nor show the peer's chain, and it opens
new connections on its own whenever the old one is gone (a worker restart). So the SDK
terminates TLS itself: the channel speaks plaintext HTTP/2 to a Unix socket in a fresh
owner-only (0700) folder, and for each connection grpcio opens there the relay

1. opens its own TCP connection to the worker and completes the TLS 1.3 handshake with
   every check of :func:`open_verified` (TLS 1.3 only, exactly one certificate, the pin,
   proof of the key), on a short-lived thread;
2. only then starts copying bytes in both directions, on the relay's one thread that
   serves all connections of the client with a selector.

Until step 1 passed, grpcio's first bytes (the preface and the HEADERS that carry the
bearer) wait unread in the local socket. On a refusal the local connection is closed
unread and the typed error is recorded; the SDK raises it in place of grpcio's
``UNAVAILABLE`` until a later connection passes the checks again.

The relay never logs, inspects or keeps what it forwards: each chunk is dropped once
written.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import socket
import ssl
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from .._errors import PinMismatchError, TlsPolicyError, TransportError, TrustError
from .._reasons import LocalReason
from ._certificate import LeafCertificate
from ._descriptor import Endpoint
from ._preflight import HandshakeDroppedError, open_verified

# Pauses between pre-flight attempts after a silent drop: doubling from the first, capped.
_DROP_RETRY_FIRST: Final = 0.1
_DROP_RETRY_CAP: Final = 1.0

# Large reads keep the Python work per byte low: one call moves whatever is ready.
_CHUNK: Final = 256 * 1024
# sockaddr_un holds at most 108 bytes on Linux (104 on macOS).
_MAX_SOCKET_PATH: Final = 100
_READ: Final = selectors.EVENT_READ
_WRITE: Final = selectors.EVENT_WRITE
_WOULD_BLOCK: Final = (
    BlockingIOError,
    InterruptedError,
    ssl.SSLWantReadError,
    ssl.SSLWantWriteError,
)


def _remove_folder(folder: str, owner_pid: int) -> None:
    # A forked child shares the folder's name, not the relay: only its creator removes it.
    if os.getpid() == owner_pid:
        shutil.rmtree(folder, ignore_errors=True)


def _private_folder() -> str:
    """A fresh 0700 folder short enough for a socket path (``mkdtemp`` creates it 0700)."""
    folder = tempfile.mkdtemp(prefix="colossus-relay-")
    if len(folder) + len("/relay.sock") > _MAX_SOCKET_PATH:
        shutil.rmtree(folder, ignore_errors=True)
        folder = tempfile.mkdtemp(prefix="colossus-relay-", dir="/tmp")
    return folder


@dataclass(eq=False)
class _Link:
    """One grpcio connection joined to one verified TLS connection."""

    local: socket.socket
    remote: ssl.SSLSocket
    to_remote: memoryview | None = None
    to_local: memoryview | None = None
    remote_done: bool = False
    """The worker closed; what is left in ``to_local`` still goes to grpcio first."""
    masks: dict[int, int] = field(default_factory=dict)
    inbound: memoryview = field(default_factory=lambda: memoryview(bytearray(_CHUNK)))
    """Reused for what the worker sends: many TLS records gathered into one local write."""


class TrustRelay:
    """Accepts grpcio's plaintext connections and joins each to a verified TLS one.

    Created per client connection; :meth:`close` stops the thread, closes every
    connection and removes the socket folder.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        expected_pin: str,
        anchor: LeafCertificate,
        timeout: float,
        *,
        preflight_first: bool = False,
    ) -> None:
        self._endpoint = endpoint
        self._pin = expected_pin
        self._anchor = anchor
        self._timeout = timeout
        # Set by a sidecar's connect: whether its worker exited (a handshake then ends).
        self.gone: Callable[[], bool] | None = None
        self._lock = threading.Lock()
        # With preflight_first, grpcio may connect while preflight() runs: its connection
        # then waits for that verdict and takes the verified connection, one handshake.
        self._preflight_done = threading.Condition(self._lock)
        self._preflighting = preflight_first
        self._preflight_failed = False
        self._refusal: TrustError | None = None
        self._unreachable: TransportError | None = None
        self._parked: ssl.SSLSocket | None = None
        self._ready: list[tuple[socket.socket, ssl.SSLSocket]] = []
        self._links: set[_Link] = set()
        self._pending: set[socket.socket] = set()
        self._closed = False
        self._folder = _private_folder()
        # Also removed at interpreter exit when a client is never closed.
        self._remove_folder = weakref.finalize(self, _remove_folder, self._folder, os.getpid())
        self.path = os.path.join(self._folder, "relay.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(self.path)
            self._listener.listen(64)
            self._listener.setblocking(False)
            self._wake_reader, self._wake_writer = socket.socketpair()
            self._wake_reader.setblocking(False)
            self._wake_writer.setblocking(False)
        except BaseException:
            self._listener.close()
            self._remove_folder()
            raise
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, _READ)
        self._selector.register(self._wake_reader, _READ)
        self._thread = threading.Thread(
            target=self._serve, name="colossus-trust-relay", daemon=True
        )
        self._thread.start()

    @property
    def target(self) -> str:
        """The grpcio target of the relay's socket."""
        return "unix:" + self.path

    def preflight(self) -> None:
        """Verifies the worker now, on the calling thread, and keeps that connection.

        The kept connection carries grpcio's next connection, so connecting costs one
        handshake. Raises the typed refusal, exactly like every later connection.
        """
        try:
            tls = self._verified_after_drops()
        except BaseException:
            with self._lock:
                self._preflighting, self._preflight_failed = False, True
                self._preflight_done.notify_all()
            raise
        with self._lock:
            self._preflighting = False
            self._preflight_done.notify_all()
            if self._closed:
                tls.close()
                raise TransportError("the client was closed while connecting")
            stale, self._parked = self._parked, tls
        if stale is not None:
            stale.close()

    def _verified_after_drops(self) -> ssl.SSLSocket:
        """The pre-flight, tried again while the worker drops it silently (it may be
        restarting), until the connect timeout runs out; a refusal ends it at once."""
        deadline = time.monotonic() + self._timeout
        pause = _DROP_RETRY_FIRST
        while True:
            try:
                return self._verified(drop_is_refusal=False)
            except HandshakeDroppedError as exc:
                left = deadline - time.monotonic()
                if left <= pause or self._closed:
                    raise TransportError(str(exc)) from None
            time.sleep(pause)
            pause = min(pause * 2, _DROP_RETRY_CAP)

    def refusal(self) -> TrustError | None:
        """The refusal of the latest checked connection, None once one passed again."""
        return self._refusal

    def unreachable(self) -> TransportError | None:
        """Why the latest connection to the worker could not even be opened (``UNREACHABLE``:
        nothing listens there), None once one was opened again. grpcio only sees its local
        connection closed, and would wait for a ready channel until its call's deadline."""
        return self._unreachable

    def close(self) -> None:
        """Stops the relay: closes every connection and removes the socket folder."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._preflight_done.notify_all()
        self._wake()
        if self._thread is not threading.current_thread():
            self._thread.join(5.0)
        self._remove_folder()

    # -- verification (calling thread or a handshake thread) ----------------------------

    def _verified(self, *, drop_is_refusal: bool) -> ssl.SSLSocket:
        try:
            tls = open_verified(
                self._endpoint,
                self._pin,
                self._anchor,
                self._timeout,
                drop_is_refusal=drop_is_refusal,
                gone=self.gone,
            )
        except (PinMismatchError, TlsPolicyError) as refusal:
            # Recorded before grpcio's connection is closed, so whoever sees the failed
            # call already finds the reason here.
            self._refusal = refusal
            raise
        except TransportError as failure:
            if failure.reason == LocalReason.UNREACHABLE:
                self._unreachable = failure
            raise
        self._refusal = None
        self._unreachable = None
        return tls

    def _handshake(self, local: socket.socket) -> None:
        """Joins ``local`` to the kept or a newly verified connection, or closes it unread."""
        with self._lock:
            self._preflight_done.wait_for(
                lambda: not self._preflighting or self._closed, self._timeout
            )
            # A failed pre-flight fails the connect: no second handshake with that worker.
            refused = self._preflight_failed
            tls, self._parked = self._parked, None
        if tls is None and not refused:
            try:
                tls = self._verified(drop_is_refusal=False)
            except (TrustError, TransportError, OSError):
                tls = None
        with self._lock:
            self._pending.discard(local)
            if tls is not None and not self._closed:
                self._ready.append((local, tls))
                tls = None
                local = None  # type: ignore[assignment]
        if tls is not None:
            tls.close()
        if local is not None:
            local.close()
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    # -- the relay thread -----------------------------------------------------------------

    def _serve(self) -> None:
        selector = self._selector
        try:
            while not self._closed:
                for key, _ in selector.select():
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_reader:
                        self._drain_wake()
                    else:
                        self._pump(key.data)
        finally:
            self._shutdown()

    def _accept(self) -> None:
        while True:
            try:
                local, _ = self._listener.accept()
            except _WOULD_BLOCK:
                return
            except OSError:
                return
            with self._lock:
                if self._closed:
                    local.close()
                    return
                self._pending.add(local)
            threading.Thread(
                target=self._handshake, args=(local,), name="colossus-trust-handshake", daemon=True
            ).start()

    def _drain_wake(self) -> None:
        with contextlib.suppress(*_WOULD_BLOCK):
            while self._wake_reader.recv(4096):
                pass
        with self._lock:
            joined, self._ready = self._ready, []
        for local, remote in joined:
            local.setblocking(False)
            remote.setblocking(False)
            link = _Link(local, remote)
            self._links.add(link)
            self._pump(link)

    def _pump(self, link: _Link) -> None:
        """Moves whatever can move without blocking, in both directions, then re-arms.

        Every step is tried whichever socket woke the selector: TLS may hold decrypted
        bytes the selector cannot see, so reading stops only when a read would block.
        """
        local, remote = link.local, link.remote
        try:
            moved = True
            while moved:
                moved = False
                if link.to_remote is None:
                    try:
                        data = local.recv(_CHUNK)
                    except _WOULD_BLOCK:
                        pass
                    else:
                        if not data:
                            raise EOFError
                        link.to_remote = memoryview(data)
                        moved = True
                if link.to_remote is not None:
                    try:
                        sent = remote.send(link.to_remote)
                    except _WOULD_BLOCK:
                        pass
                    else:
                        rest = link.to_remote[sent:]
                        link.to_remote = rest if rest else None
                        moved = True
                if link.to_local is None and not link.remote_done:
                    filled = self._gather(link)
                    if filled:
                        link.to_local = link.inbound[:filled]
                        moved = True
                if link.to_local is not None:
                    try:
                        sent = local.send(link.to_local)
                    except _WOULD_BLOCK:
                        pass
                    else:
                        rest = link.to_local[sent:]
                        link.to_local = rest if rest else None
                        moved = True
                if link.remote_done and link.to_local is None:
                    raise EOFError
        except (EOFError, OSError, ssl.SSLError):
            self._unlink(link)
            return
        self._arm(
            link,
            local,
            (_WRITE if link.to_local is not None else 0) | (_READ if link.to_remote is None else 0),
        )
        self._arm(
            link,
            remote,
            (_WRITE if link.to_remote is not None else 0)
            | (_READ if link.to_local is None and not link.remote_done else 0),
        )

    @staticmethod
    def _gather(link: _Link) -> int:
        """Reads what the worker sent, record after record, into ``link.inbound``.

        Decrypting stops when a read would block or the buffer is full, so a burst of
        small messages reaches grpcio in one write.
        """
        buffer, remote, filled = link.inbound, link.remote, 0
        while filled < _CHUNK:
            try:
                count = remote.recv_into(buffer[filled:])
            except _WOULD_BLOCK:
                break
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError, ConnectionError):
                link.remote_done = True
                break
            if not count:
                link.remote_done = True
                break
            filled += count
        return filled

    def _arm(self, link: _Link, sock: socket.socket, mask: int) -> None:
        fd = sock.fileno()
        current = link.masks.get(fd, 0)
        if mask == current:
            return
        if current == 0:
            self._selector.register(sock, mask, link)
        elif mask == 0:
            self._selector.unregister(sock)
        else:
            self._selector.modify(sock, mask, link)
        link.masks[fd] = mask

    def _unlink(self, link: _Link) -> None:
        for sock in (link.local, link.remote):
            if link.masks.get(sock.fileno(), 0):
                with contextlib.suppress(KeyError, ValueError, OSError):
                    self._selector.unregister(sock)
            sock.close()
        link.to_remote = link.to_local = None
        self._links.discard(link)

    def _shutdown(self) -> None:
        for link in list(self._links):
            self._unlink(link)
        with self._lock:
            parked, self._parked = self._parked, None
            joined, self._ready = self._ready, []
            pending, self._pending = self._pending, set()
        if parked is not None:
            parked.close()
        for local, remote in joined:
            local.close()
            remote.close()
        for local in pending:
            # Its handshake thread finds the relay closed and closes the TLS side.
            with contextlib.suppress(OSError):
                local.shutdown(socket.SHUT_RDWR)
        self._selector.close()
        self._listener.close()
        self._wake_reader.close()
        self._wake_writer.close()
