"""What the worker saw during one conformance case (W15).

The recorder is fed by :class:`~.hooks.FaultHooks` from the server's event loop
and read by the control channel from its own thread, so every method takes
the lock. Nothing here ever stores a header value: only whether an
``authorization`` header was present.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class _Connection:
    case_id: int
    tls_version: str | None
    handshake_completed: bool
    accepted_before_case: bool
    bearer_presented: bool = False
    rpcs: list[str] = field(default_factory=list)
    closed: bool = False

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.case_id,
            "tls_version": self.tls_version,
            "handshake_completed": self.handshake_completed,
            "bearer_presented": self.bearer_presented,
            "rpcs": list(self.rpcs),
            "closed": self.closed,
        }
        if self.accepted_before_case:
            # A connection the client kept open from an earlier case. It is
            # listed because it carried RPCs of this case.
            out["accepted_before_case"] = True
        return out


class ObservationLog:
    """Connections, RPCs and watch cursors of the current case."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Every connection since start-up: worker conn_id -> (tls_version, ok).
        self._handshakes: dict[int, tuple[str | None, bool]] = {}
        # Accepted connections whose handshake has not ended yet (refused, failed or done).
        self._in_handshake: set[int] = set()
        # Connections that closed, whether or not a case has listed them yet (a refused
        # connection can give its place back before its handshake is reported).
        self._closed: set[int] = set()
        self._reset_locked()

    def _reset_locked(self) -> None:
        self._connections: dict[int, _Connection] = {}
        self._order: list[int] = []
        self._rpc_calls: Counter[str] = Counter()
        self._watch_cursors: list[int] = []
        self._bearer_seen = False
        self._silent_closes = 0
        self._shutdowns = 0

    def reset(self) -> None:
        """Start a fresh record (``begin_case``)."""
        with self._lock:
            self._reset_locked()

    def _case_connection(self, conn_id: int, *, before: bool) -> _Connection:
        conn = self._connections.get(conn_id)
        if conn is None:
            tls_version, ok = self._handshakes.get(conn_id, (None, False))
            conn = _Connection(len(self._order) + 1, tls_version, ok, before,
                               closed=conn_id in self._closed)
            self._connections[conn_id] = conn
            self._order.append(conn_id)
        return conn

    def accepted(self, conn_id: int) -> None:
        with self._lock:
            self._in_handshake.add(conn_id)

    def handshakes_in_progress(self) -> int:
        """How many accepted connections have not finished (or failed) their handshake."""
        with self._lock:
            return len(self._in_handshake)

    def forget_handshakes_in_progress(self) -> None:
        """The worker stopped (an in-place restart): handshakes it had not finished never will."""
        with self._lock:
            self._in_handshake.clear()

    def connection(self, conn_id: int, tls_version: str | None, ok: bool) -> None:
        with self._lock:
            self._in_handshake.discard(conn_id)
            self._handshakes[conn_id] = (tls_version if ok else None, ok)
            if len(self._handshakes) > 100_000:
                # Bound the table on a long-lived worker: forget the oldest half.
                for key in list(self._handshakes)[:50_000]:
                    del self._handshakes[key]
            self._case_connection(conn_id, before=False)

    def disconnected(self, conn_id: int) -> None:
        with self._lock:
            self._closed.add(conn_id)
            if len(self._closed) > 100_000:  # bounded on a long-lived worker, as _handshakes
                self._closed = set(sorted(self._closed)[50_000:])
            conn = self._connections.get(conn_id)
            if conn is not None:
                conn.closed = True

    def rpc(self, conn_id: int, method: str, bearer_presented: bool) -> None:
        with self._lock:
            self._rpc_calls[method] += 1
            self._bearer_seen = self._bearer_seen or bearer_presented
            if conn_id:
                conn = self._case_connection(conn_id, before=True)
                conn.rpcs.append(method)
                conn.bearer_presented = conn.bearer_presented or bearer_presented

    def silent_close(self) -> None:
        with self._lock:
            self._silent_closes += 1

    def shutdown(self) -> None:
        with self._lock:
            self._shutdowns += 1

    def watch(self, after_sequence: int) -> None:
        with self._lock:
            self._watch_cursors.append(after_sequence)

    def snapshot(self) -> dict[str, Any]:
        """The ``observations`` object of the control protocol."""
        with self._lock:
            return {
                "connections": [self._connections[c].as_json() for c in self._order],
                "rpc_calls": dict(self._rpc_calls),
                "watch_cursors": list(self._watch_cursors),
                "bearer_seen": self._bearer_seen,
                "silent_closes": self._silent_closes,
                "shutdowns": self._shutdowns,
            }
