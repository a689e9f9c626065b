"""A sidecar worker that misbehaves on purpose, for the conformance suite only (W15, S7).

The runner hands an SDK this program as the sidecar's worker command; the SDK appends its
bootstrap flags as usual. The wrapper records each start in a file of the runner's, arms
the named fault in this process, then runs the ordinary worker::

    python -c "...sidecar_wrapper import main..." --sidecar-fault crash-loop --record FILE

Faults (docs/fault-control.md, "Sidecar faults"):

- ``exit-after-create-commit``: the first worker process exits right after a CreateRun
  committed, before answering (the outcome is unknown to the SDK; the run exists);
- ``crash-loop``: every worker process exits on its first call other than GetServerInfo;
- ``exit-during-connect``: the first worker process exits on the SDK's GetServerInfo, so
  the SDK's own connect meets the exit (later starts behave);
- ``reply-endpoint-localhost``, ``reply-other-pin``, ``reply-bad-bearer``,
  ``reply-extra-member``, ``reply-other-api-version``, ``reply-bad-instance-id``,
  ``reply-bad-credential-id``: the bootstrap reply is rewritten before the SDK reads it;
- ``listener-tls12``, ``listener-foreign-leaf``, ``listener-leaf-with-intermediate``: the
  bootstrap reply is genuine, but the listener presents that wrong TLS setup (the C4 cases
  of a sidecar); every unary call the worker receives is appended to ``<record>.calls``
  (``.starts`` replaced), so the runner can see that none arrived;
- ``exit-keeping-socket``: the first worker process writes its genuine bootstrap reply,
  then exits, leaving behind a child that holds only the listening socket (never
  accepting on it): a connect to the endpoint gets a TCP connection nobody answers, so
  only the worker's exit tells the SDK to replace it (later starts behave);
- ``spawn-child``: before serving, the worker starts a long-lived child in its own
  process group (as a real worker's tool processes would be) and appends the child's PID
  to the file named by ``--children``, so the runner can see whether closing the SDK
  ended it.

Nothing here is reachable from the public API: it exists only when the runner chooses it
as the worker command.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FAULTS = (
    "exit-after-create-commit",
    "crash-loop",
    "exit-during-connect",
    "reply-endpoint-localhost",
    "reply-other-pin",
    "reply-bad-bearer",
    "reply-extra-member",
    "reply-other-api-version",
    "reply-bad-instance-id",
    "reply-bad-credential-id",
    "spawn-child",
    "exit-keeping-socket",
    "listener-tls12",
    "listener-foreign-leaf",
    "listener-leaf-with-intermediate",
)
LISTENER_PREFIX = "listener-"
# Long enough to outlive any case, short enough that a survivor does not linger for long.
CHILD_SECONDS = 120
EXIT_FAULT = 70  # the status an injected exit uses, so worker logs name the cause


def record_start(path: Path) -> int:
    """Appends this start to the runner's file; returns how many starts it now holds."""
    with open(path, "a") as record:
        record.write(f"{os.getpid()}\n")
    return len(path.read_text().splitlines())


def spawn_child(record: Path) -> None:
    """Starts a child that stays in this process's group, and records its PID."""
    child = subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep({CHILD_SECONDS})"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
    )
    with open(record, "a") as out:
        out.write(f"{child.pid}\n")


def rewrite_reply(fault: str, reply: dict[str, Any]) -> dict[str, Any]:
    reply = dict(reply)
    if fault == "reply-endpoint-localhost":
        reply["endpoint"] = reply["endpoint"].replace("127.0.0.1", "localhost").replace("[::1]", "localhost")
    elif fault == "reply-other-pin":
        # Well-formed, but not the SHA-256 of the certificate sent with it.
        reply["certificate_sha256"] = "ab" * 32
    elif fault == "reply-bad-bearer":
        reply["bearer"] = "too short"
    elif fault == "reply-extra-member":
        reply["debug"] = True
    elif fault == "reply-other-api-version":
        reply["api_version"] = "v2alpha1"
    elif fault == "reply-bad-instance-id":
        # Outside the opaque-ID grammar; only the reply's own field check can see it.
        reply["instance_id"] = "wkr/../other"
    elif fault == "reply-bad-credential-id":
        reply["credential_id"] = "cred with spaces"
    return reply


def _listening_sockets() -> list[int]:
    """The descriptors of this process's listening sockets."""
    import socket
    import stat

    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=fd)
            try:
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                    found.append(fd)
            finally:
                sock.detach()
        except OSError:
            continue
    return found


def exit_keeping_socket() -> None:
    """Forks a child that keeps only the listening socket(s) open, then exits this worker."""
    keep = set(_listening_sockets())
    if os.fork() == 0:  # the child: nothing but the socket, for longer than any case
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd not in keep:
                with contextlib.suppress(OSError):
                    os.close(fd)
        time.sleep(CHILD_SECONDS)
        os._exit(0)
    os._exit(EXIT_FAULT)


def calls_record(record: Path) -> Path:
    """Where a listener fault records the unary calls its worker received."""
    return record.with_name(record.name.removesuffix(".starts") + ".calls")


def arm_listener(variant: str, calls: Path) -> None:
    """Serves the wrong listener (no control socket: the fault is fixed for this process)
    and records every unary call, which a client that refused the handshake never makes."""
    from .. import faults
    from ..fault_flags import ListenerVariant
    from .hooks import FaultHooks

    class RecordingHooks(FaultHooks):
        async def before_unary(self, method: str) -> None:
            with open(calls, "a") as out:
                out.write(f"{method}\n")
            await super().before_unary(method)

    hooks = RecordingHooks(listener=ListenerVariant(variant))
    setattr(faults, "hooks_from_args", lambda args: (hooks, None))  # noqa: B010 - a deliberate patch


def arm(fault: str, start: int, record: Path) -> None:
    """Patches this process's worker before it starts."""
    from .. import faults
    from ..sidecar import main as sidecar_main
    from ..worker_hooks import WorkerHooks

    if fault == "spawn-child":
        return
    if fault == "exit-keeping-socket":
        if start == 1:
            write_frame = getattr(sidecar_main, "write_frame")  # noqa: B009 - patched below

            def exiting_write_frame(fd: int, message: dict[str, Any]) -> None:
                write_frame(fd, message)
                if "bearer" in message:  # the genuine reply is out: the SDK now connects
                    exit_keeping_socket()

            setattr(sidecar_main, "write_frame", exiting_write_frame)  # noqa: B010 - a deliberate patch
        return
    if fault.startswith(LISTENER_PREFIX):
        arm_listener(fault.removeprefix(LISTENER_PREFIX), calls_record(record))
        return
    if fault.startswith("reply-"):
        write_frame = getattr(sidecar_main, "write_frame")  # noqa: B009 - patched below

        def rewriting_write_frame(fd: int, message: dict[str, Any]) -> None:
            is_success = "bearer" in message
            write_frame(fd, rewrite_reply(fault, message) if is_success else message)

        setattr(sidecar_main, "write_frame", rewriting_write_frame)  # noqa: B010 - a deliberate patch
        return

    class ExitingHooks(WorkerHooks):
        async def before_unary(self, method: str) -> None:
            if fault == "crash-loop" and method != "SystemService/GetServerInfo":
                os._exit(EXIT_FAULT)
            if fault == "exit-during-connect" and start == 1 and method == "SystemService/GetServerInfo":
                os._exit(EXIT_FAULT)

        async def after_unary_commit(self, method: str) -> None:
            if fault == "exit-after-create-commit" and start == 1 and method == "RunService/CreateRun":
                os._exit(EXIT_FAULT)

    setattr(faults, "hooks_from_args", lambda args: (ExitingHooks(), None))  # noqa: B010 - a deliberate patch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--sidecar-fault", required=True, choices=FAULTS)
    parser.add_argument("--record", required=True, type=Path)
    parser.add_argument("--children", type=Path, help="where spawn-child records its child's PID")
    ns, rest = parser.parse_known_args(argv)
    arm(ns.sidecar_fault, record_start(ns.record), ns.record)
    if ns.sidecar_fault == "spawn-child":
        if ns.children is None:
            parser.error("spawn-child needs --children")
        spawn_child(ns.children)
    from ..cli import main as worker_main

    return worker_main(rest)
