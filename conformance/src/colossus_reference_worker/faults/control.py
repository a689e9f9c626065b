"""The fault-control channel: a 0600 Unix socket speaking JSON lines (W15).

It runs on a daemon thread of its own, so it keeps answering while the
worker's event loop is busy (for example inside a stalled watch). Only the
process owner can connect: the socket is created inside a private folder,
given mode 0600 and only then renamed to the requested path.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import stat
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from .hooks import FaultState
from .plan import FaultSpecError, parse_plan

log = logging.getLogger(__name__)

# Longest request line accepted; a fault list is a few hundred bytes.
MAX_LINE_BYTES = 1 << 20
MAX_CASE_NAME = 256
# Longest gap of an in-process restart (``restart``'s ``down_seconds``).
MAX_RESTART_DOWN_SECONDS = 5.0


class FaultControlServer:
    """Serves the control protocol on ``path`` for ``state``."""

    def __init__(self, path: str, state: FaultState) -> None:
        self.path = os.path.abspath(path)
        self.state = state
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        # Set by the serving loop: restarts the worker inside this process (``restart`` op).
        self.restart_handler: Callable[[float], None] | None = None
        # Set by the serving loop: starts a worker a ``shutdown`` fault left stopped.
        self.resume_handler: Callable[[float], None] | None = None
        self._restart_lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        """Create the socket and start serving. Refuses an existing path."""
        if os.path.lexists(self.path):
            raise FileExistsError(f"fault-control socket path already exists: {self.path}")
        folder = tempfile.mkdtemp(prefix=".fault-control-", dir=os.path.dirname(self.path))
        staging = os.path.join(folder, "sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(staging)
            os.chmod(staging, 0o600)
            os.rename(staging, self.path)
        except BaseException:
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)
            raise
        finally:
            os.rmdir(folder)
        sock.listen(8)
        self._sock = sock
        self._thread = threading.Thread(
            target=self._serve, name="fault-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and remove the socket if it is still ours."""
        self._closing.set()
        sock, self._sock = self._sock, None
        if sock is None:
            return
        with contextlib.suppress(OSError):
            st = os.lstat(self.path)
            if stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid():
                os.unlink(self.path)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    # -- serving ----------------------------------------------------------------

    def _serve(self) -> None:
        while not self._closing.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            threading.Thread(
                target=self._client, args=(conn,), name="fault-control-client", daemon=True
            ).start()

    def _client(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as stream:
            while True:
                line = stream.readline(MAX_LINE_BYTES + 1)
                if not line:
                    return
                if len(line) > MAX_LINE_BYTES:
                    self._send(stream, {"ok": False, "error": "request line too long"})
                    return
                if not line.strip():
                    continue
                self._send(stream, self.handle_line(line))

    @staticmethod
    def _send(stream: Any, reply: dict[str, Any]) -> None:
        stream.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        stream.flush()

    # -- protocol -----------------------------------------------------------------

    def handle_line(self, line: bytes) -> dict[str, Any]:
        """Answer one request line; never raises."""
        try:
            request = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return {"ok": False, "error": "request is not valid JSON"}
        if not isinstance(request, dict):
            return {"ok": False, "error": "request must be a JSON object"}
        try:
            return self.handle(request)
        except FaultSpecError as exc:
            return {"ok": False, "error": str(exc)}
        except Exception:  # a bug here must not take the worker down
            log.exception("fault-control request failed")
            return {"ok": False, "error": "internal error"}

    def _resume(self) -> None:
        """A worker a ``shutdown`` fault stopped serves again before the next case."""
        handler = self.resume_handler
        if handler is not None:
            with self._restart_lock:
                try:
                    handler(0.0)
                except Exception as exc:
                    log.warning("starting the worker again failed: %s", exc)

    def _restart(self, request: dict[str, Any]) -> dict[str, Any]:
        """A graceful stop and a fresh start inside this process; answers once serving again."""
        if set(request) - {"op", "down_seconds"}:
            raise FaultSpecError("restart takes only down_seconds")
        down = request.get("down_seconds", 0)
        if isinstance(down, bool) or not isinstance(down, (int, float)) or not (
            0 <= down <= MAX_RESTART_DOWN_SECONDS
        ):
            raise FaultSpecError(f"down_seconds must be 0 to {MAX_RESTART_DOWN_SECONDS:g}")
        handler = self.restart_handler
        if handler is None:
            return {"ok": False, "error": "this worker cannot restart in place"}
        with self._restart_lock:  # one restart at a time, whoever asks
            try:
                handler(float(down))
            except Exception as exc:
                log.warning("in-place restart failed: %s", exc)
                return {"ok": False, "error": f"restart failed: {exc}"}
        return {"ok": True}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "begin_case":
            if set(request) - {"op", "case", "faults", "keep_observations"}:
                raise FaultSpecError("begin_case takes only case, faults and keep_observations")
            case = request.get("case")
            if not isinstance(case, str) or not 0 < len(case) <= MAX_CASE_NAME:
                raise FaultSpecError("case must be a non-empty string")
            keep = request.get("keep_observations", False)
            if not isinstance(keep, bool):
                raise FaultSpecError("keep_observations must be true or false")
            plan = parse_plan(request.get("faults"))
            if not keep:
                self._resume()
            self.state.begin(case, plan, keep_observations=keep)
            return {"ok": True, "case": case}
        if op == "observations":
            return {"ok": True, "case": self.state.case,
                    "observations": self.state.observations.snapshot()}
        if op == "end_case":
            self._resume()
            case = self.state.case
            observations = self.state.observations.snapshot()
            self.state.end()
            return {"ok": True, "case": case, "observations": observations}
        if op == "handshakes":
            return {"ok": True, "in_progress": self.state.observations.handshakes_in_progress()}
        if op == "ping":
            return {"ok": True, "case": self.state.case}
        if op == "restart":
            return self._restart(request)
        return {"ok": False, "error": f"unknown op {op!r}"}
