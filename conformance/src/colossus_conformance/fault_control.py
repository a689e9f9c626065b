"""Client of the worker's fault-control socket (``docs/fault-control.md``)."""

from __future__ import annotations

import json
import socket
import time
from typing import Any


class FaultControlError(Exception):
    """The worker refused a request or the channel broke."""


class FaultControl:
    """One connection to the worker's fault-control socket; JSON lines both ways."""

    def __init__(self, path: str, timeout: float = 10.0):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(path)
        self._buffer = b""

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self._sock.sendall(json.dumps(message).encode() + b"\n")
        while b"\n" not in self._buffer:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise FaultControlError("fault-control socket closed")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise FaultControlError(f"worker refused {message.get('op')}: {reply.get('error')}")
        return reply

    def begin_case(self, case: str, faults: list[dict[str, Any]], keep_observations: bool = False) -> None:
        message: dict[str, Any] = {"op": "begin_case", "case": case, "faults": faults}
        if keep_observations:
            message["keep_observations"] = True
        self.request(message)

    def observations(self) -> dict[str, Any]:
        observations: dict[str, Any] = self.request({"op": "observations"}).get("observations", {})
        return observations

    def handshakes_in_progress(self) -> int:
        """Accepted connections whose TLS handshake the worker has not finished yet."""
        count: int = self.request({"op": "handshakes"})["in_progress"]
        return count

    def wait_for_handshakes(self, bound_seconds: float) -> int:
        """Polls until the worker has finished every handshake it accepted.

        Returns 0 once it has, or how many are still going when ``bound_seconds`` ran out.
        """
        deadline = time.monotonic() + bound_seconds
        while (pending := self.handshakes_in_progress()) and time.monotonic() < deadline:
            time.sleep(0.01)
        return pending

    def restart_in_place(self, down_seconds: float = 0.0) -> None:
        """A graceful stop and a fresh start inside the worker's process; returns once it
        serves again (the ``restart`` op)."""
        self.request({"op": "restart", "down_seconds": down_seconds})

    def end_case(self) -> None:
        self.request({"op": "end_case"})

    def close(self) -> None:
        self._sock.close()
