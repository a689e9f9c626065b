"""The fault-control socket's own hygiene (W15), on a server started in process.

A request line over the cap is answered with an error and the connection is
closed (nothing of it is parsed as a request), and closing the server removes
its path only while the path is still its socket.
"""

from __future__ import annotations

import json
import socket

from colossus_reference_worker.faults.control import MAX_LINE_BYTES, FaultControlServer
from colossus_reference_worker.faults.hooks import FaultState


def _started(path) -> FaultControlServer:
    server = FaultControlServer(str(path), FaultState())
    server.start()
    return server


def _ask(conn: socket.socket, payload: bytes) -> list[dict[str, object]]:
    """Send ``payload``, then read every reply until the server closes."""
    conn.sendall(payload)
    conn.shutdown(socket.SHUT_WR)
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return [json.loads(line) for line in data.splitlines()]


def test_an_overlong_line_is_refused_and_ends_the_connection(short_tmp):
    server = _started(short_tmp / "long-line.sock")
    try:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(server.path)
            conn.settimeout(60)
            padding = "x" * MAX_LINE_BYTES
            line = json.dumps({"op": "ping", "pad": padding}).encode() + b"\n"
            replies = _ask(conn, line + b'{"op": "ping"}\n')
        assert replies == [{"ok": False, "error": "request line too long"}]
        with socket.socket(socket.AF_UNIX) as conn:  # the server itself is still serving
            conn.connect(server.path)
            conn.settimeout(60)
            assert [reply["ok"] for reply in _ask(conn, b'{"op": "ping"}\n')] == [True]
    finally:
        server.close()


def test_closing_leaves_a_path_that_is_no_longer_its_socket(short_tmp):
    path = short_tmp / "replaced.sock"
    server = _started(path)
    path.unlink()
    path.write_text("someone else's file")
    server.close()
    assert path.read_text() == "someone else's file"


def test_closing_removes_its_own_socket(short_tmp):
    path = short_tmp / "own.sock"
    server = _started(path)
    server.close()
    assert not path.exists()
