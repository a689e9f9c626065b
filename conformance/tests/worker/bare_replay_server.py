"""The replay baseline for bench_worker: a bare grpclib server that only streams frames.

It serves ``RunService/WatchRun`` by sending a fixed list of already encoded
``WatchRunResponse`` frames, one ``send_message`` each, over the worker's own
TLS listener and write-coalescing transport with the worker's certificate. No
authentication, journal, verification or cache: what is left is the cost of
grpclib, HTTP/2 and TLS, which a worker replay can at best match.

    python bare_replay_server.py STATE_DIR FRAMES_FILE [asyncio|uvloop]

``FRAMES_FILE`` holds the frames, each preceded by its length (4 bytes, big
endian). The server prints its port on stdout and serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import sys
from pathlib import Path
from typing import Any

import grpclib.const
from grpclib.server import Stream

from colossus_reference_worker import event_loop
from colossus_reference_worker._gen.colossus.api.v1alpha1 import (
    WatchRunRequest,
    WatchRunResponse,
)
from colossus_reference_worker.config import Limits
from colossus_reference_worker.handlers.pipeline import ConnectionTable
from colossus_reference_worker.listener import Listener
from colossus_reference_worker.server import _GrpcServer
from colossus_reference_worker.tls import load_identity
from colossus_reference_worker.worker_hooks import WorkerHooks


def _read_frames(path: Path) -> list[bytes]:
    data, frames, at = path.read_bytes(), [], 0
    while at < len(data):
        (size,) = struct.unpack_from(">I", data, at)
        frames.append(data[at + 4:at + 4 + size])
        at += 4 + size
    return frames


class BareWatch:
    def __init__(self, frames: list[bytes]) -> None:
        self._frames = frames

    async def _watch(self, stream: Stream[Any, Any]) -> None:
        await stream.recv_message()
        for frame in self._frames:
            await stream.send_message(frame)

    def __mapping__(self) -> dict[str, grpclib.const.Handler]:
        return {"/colossus.api.v1alpha1.RunService/WatchRun": grpclib.const.Handler(
            self._watch, grpclib.const.Cardinality.UNARY_STREAM, WatchRunRequest,
            WatchRunResponse)}


async def serve(state: Path, frames: list[bytes]) -> None:
    identity = load_identity(state)
    listener = Listener(identity.server_context(), Limits(), WorkerHooks(), ConnectionTable())
    server = _GrpcServer([BareWatch(frames)], listener)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    await server.start(sock=sock)
    print(sock.getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    listener.close()
    server.close()
    await server.wait_closed()


if __name__ == "__main__":
    # On the worker's event loop (bench_worker passes it), so the ratio compares like with like.
    event_loop.run(sys.argv[3] if len(sys.argv) > 3 else "asyncio",
                   serve(Path(sys.argv[1]), _read_frames(Path(sys.argv[2]))))
