"""Starts one conformance client and exchanges protocol messages with it."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import protocol
from .sync_points import sync_point_ids

HELLO_TIMEOUT_SECONDS = 60.0


@dataclass
class Exchange:
    """What came back for one case instruction."""

    status: str  # "ok", "timeout", "crashed" or "protocol_error"
    result: dict[str, Any] | None = None
    detail: str = ""
    synced: list[str] = field(default_factory=list)  # sync points reached, in order


class ClientProcess:
    """One running client: stdin/stdout carry JSON lines, a pipe carries bearers."""

    def __init__(self, command: list[str], cwd: Path, log_path: Path, env: dict[str, str] | None = None):
        self.command = command
        self.cwd = cwd
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.hello: dict[str, Any] = {}
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._bearer_w: int | None = None
        self._log: IO[bytes] | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Starts the client and completes the hello exchange; returns its hello."""
        bearer_r, bearer_w = os.pipe()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log.write(f"== start {' '.join(self.command)}\n".encode())
        self._log.flush()
        try:
            self.proc = subprocess.Popen(
                [*self.command, "--bearer-fd", str(bearer_r)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                cwd=self.cwd,
                env=self.env,
                pass_fds=(bearer_r,),
                start_new_session=True,
            )
        finally:
            os.close(bearer_r)
        self._bearer_w = bearer_w
        threading.Thread(target=self._pump, daemon=True).start()
        self._send(protocol.hello())
        message, problem = self._receive(HELLO_TIMEOUT_SECONDS)
        if message is None or message.get("type") != "client_hello":
            self.kill()
            raise RuntimeError(f"client did not say hello: {problem or message}")
        if message["protocol_version"] != protocol.PROTOCOL_VERSION:
            self.kill()
            raise RuntimeError(f"client speaks protocol {message['protocol_version']}")
        self.hello = message
        return message

    def stop(self) -> None:
        """Asks the client to exit, then makes sure it did."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self._send(protocol.shutdown())
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        """Kills the client's process group (it was started in its own session)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self._bearer_w is not None:
            with contextlib.suppress(OSError):
                os.close(self._bearer_w)
            self._bearer_w = None
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- cases -----------------------------------------------------------------

    def run_case(
        self,
        instruction: dict[str, Any],
        bearers: list[str],
        timeout: float,
        on_sync: Callable[[str], None] | None = None,
    ) -> Exchange:
        """Sends the bearers then the instruction, and waits for the matching result.

        At each sync point the client reaches, ``on_sync(step id)`` runs (the time it
        takes does not count against ``timeout``) and then the client is released.
        """
        protocol.validate_message(instruction)
        if self._log is not None:
            self._log.write(f"== case {instruction['case']}\n".encode())
            self._log.flush()
        try:
            for bearer in bearers:
                os.write(self._bearer_w, protocol.encode_bearer_frame(bearer))  # type: ignore[arg-type]
            self._send(instruction)
        except OSError as exc:
            return Exchange("crashed", detail=f"client gone before the case: {exc}")
        points = sync_point_ids(instruction["steps"]) if on_sync is not None else []
        synced: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            message, problem = self._receive(deadline - time.monotonic())
            if message is None:
                if problem == "timeout":
                    waiting = [p for p in points if p not in synced]
                    unmet = f"; sync points never reached: {', '.join(waiting)}" if waiting else ""
                    return Exchange(
                        "timeout", detail=f"no result within {timeout:.0f}s{unmet}", synced=synced
                    )
                if problem.startswith("protocol"):
                    return Exchange("protocol_error", detail=problem, synced=synced)
                return Exchange("crashed", detail=problem, synced=synced)
            if message.get("type") == "sync" and message.get("case") == instruction["case"]:
                step = message["step"]
                if on_sync is None or step not in points or step in synced:
                    return Exchange(
                        "protocol_error", detail=f"unexpected sync point {step!r} (expected one of {points})"
                    )
                synced.append(step)
                acted = time.monotonic()
                on_sync(step)
                deadline += time.monotonic() - acted
                try:
                    self._send(protocol.release(instruction["case"], step))
                except OSError as exc:
                    return Exchange(
                        "crashed", detail=f"client gone at sync point {step}: {exc}", synced=synced
                    )
                continue
            if message.get("type") != "result" or message.get("case") != instruction["case"]:
                return Exchange(
                    "protocol_error",
                    detail=f"expected the result of {instruction['case']}, got {message}",
                    synced=synced,
                )
            return Exchange("ok", result=message, synced=synced)

    # -- plumbing --------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(protocol.encode_line(message))
        self.proc.stdin.flush()

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self._lines.put(line)
        self._lines.put(None)

    def _receive(self, timeout: float) -> tuple[dict[str, Any] | None, str]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, "timeout"
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                return None, "timeout"
            if line is None:
                code = self.proc.wait() if self.proc else None
                return None, f"client exited (status {code}) without a result"
            if not line.strip():
                continue
            try:
                return protocol.decode_line(line), ""
            except protocol.ProtocolError as exc:
                return None, f"protocol error: {exc}"
