"""Loopback TLS servers for the trust tests: a genuine or wrong worker, seen from the wire.

Each accepts on its own thread and serves every connection on another, so a test can
count the connections the SDK opened and see every byte it sent after a handshake.
"""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

from colossus_agent_client._transport._descriptor import Endpoint
from fake_worker import Leaf


class ThreadedTlsServer:
    """Serves TLS up to ``max_version`` with ``chain`` and ``key_leaf``'s key; see ``serve``."""

    def __init__(
        self,
        tmp: Path,
        key_leaf: Leaf,
        *,
        chain: bytes,
        max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3,
        port: int = 0,
    ) -> None:
        cert, key = tmp / f"server-{id(self)}.pem", tmp / f"server-key-{id(self)}.pem"
        cert.write_bytes(chain)
        key.write_bytes(key_leaf.key_pem)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self.ctx.maximum_version = max_version
        self.ctx.set_alpn_protocols(["h2"])
        self.ctx.load_cert_chain(cert, key)
        self.connections = 0
        self.sock = socket.socket()
        # A wrong listener takes over the port a genuine worker has just left.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()
        self.endpoint = Endpoint("127.0.0.1", self.sock.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        """Handles one accepted connection (on its own thread)."""
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()


class EchoTlsServer(ThreadedTlsServer):
    """Echoes every byte back after the handshake; ``received`` counts them."""

    received = 0

    def serve(self, conn: socket.socket) -> None:
        try:
            with self.ctx.wrap_socket(conn, server_side=True) as tls:
                while chunk := tls.recv(65536):
                    self.received += len(chunk)
                    tls.sendall(chunk)
        except (OSError, ssl.SSLError):
            pass


class RecordingTlsServer(ThreadedTlsServer):
    """Keeps every byte each client sent after its handshake, one entry per connection."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.received: list[bytes] = []
        self.handshakes = 0
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def serve(self, conn: socket.socket) -> None:
        data = b""
        try:
            with self.ctx.wrap_socket(conn, server_side=True) as tls:
                self.handshakes += 1
                tls.settimeout(5)
                while chunk := tls.recv(65536):
                    data += chunk
        except (OSError, ssl.SSLError):
            pass
        self.received.append(data)
