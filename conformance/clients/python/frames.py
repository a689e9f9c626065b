"""The protocol's framing: JSON lines on stdout, a release awaited on stdin, bearer frames."""

from __future__ import annotations

import json
import struct
import sys
from typing import Any, BinaryIO


def read_frame(stream: BinaryIO) -> str:
    header = stream.read(4)
    if len(header) != 4:
        raise EOFError("bearer pipe closed")
    (length,) = struct.unpack(">I", header)
    data = stream.read(length) if length else b""
    if len(data) != length:
        raise EOFError("bearer pipe closed mid-frame")
    return data.decode("utf-8", errors="surrogateescape")


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def wait_for_release(case: str, step: str) -> None:
    """Tells the runner this step reached its sync point, then blocks until it is released.

    The runner restarts or stops the worker meanwhile; the caller then carries on with
    the very same SDK client and, inside a watch, the very same iterator.
    """
    write({"type": "sync", "case": case, "step": step})
    while True:
        line = sys.stdin.readline()
        if not line:
            raise EOFError(f"stdin closed while waiting at sync point {step}")
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("type") == "release" and message.get("step") == step:
            return
        raise RuntimeError(
            f"expected the release of sync point {step}, got a {message.get('type')!r} message"
        )
