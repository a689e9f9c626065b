"""What the runner learns from a sidecar's state folder once the client has closed (S7).

A sidecar connection gets a fresh state folder in the runner's scratch; the worker the SDK
starts there holds its lock while it runs, and a faulty sidecar worker (``sidecar_fault``)
records its starts, the calls it served and the children it spawned in files beside the
folder. The runner reads these after the case, never during it.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any


def sidecar_facts(connections: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The facts of every sidecar connection of a prepared instruction, by connection name."""
    return {
        c["name"]: {
            "state_released": state_released(Path(c["state_dir"])),
            "starts": _line_count(sidecar_record(Path(c["state_dir"]))),
            "rpc_calls": _line_count(sidecar_calls(Path(c["state_dir"]))) or 0,
            **children_facts(sidecar_children(Path(c["state_dir"]))),
        }
        for c in connections
        if c["placement"] == "sidecar"
    }


def state_released(state_dir: Path, wait_seconds: float = 10.0) -> bool:
    """True once no process holds the worker lock of a sidecar's state folder (S7).

    The client closes every connection before it reports, and closing a sidecar
    client must stop its worker; a worker that survives keeps the lock.
    """
    lock = state_dir / "worker.lock"
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
        finally:
            os.close(fd)
        time.sleep(0.2)


def sidecar_record(state_dir: Path) -> Path:
    """Where a faulty sidecar worker records its starts (one line each)."""
    return state_dir.with_name(state_dir.name + ".starts")


def sidecar_calls(state_dir: Path) -> Path:
    """Where a ``listener-*`` sidecar worker records the unary calls it received."""
    return state_dir.with_name(state_dir.name + ".calls")


def sidecar_children(state_dir: Path) -> Path:
    """Where a ``spawn-child`` sidecar worker records the PIDs of its children."""
    return state_dir.with_name(state_dir.name + ".children")


def children_facts(record: Path, wait_seconds: float = 5.0) -> dict[str, int]:
    """How many children a sidecar worker started and how many still run.

    The SDK signalled its worker's group when the client closed; a signalled child may
    take a moment to go, so this waits up to ``wait_seconds`` for the count to reach
    zero. Nothing is reported when the worker started no children.
    """
    try:
        pids = [int(line) for line in record.read_text().split()]
    except FileNotFoundError:
        return {}
    deadline = time.monotonic() + wait_seconds
    alive = [pid for pid in pids if _running(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _running(pid)]
    return {"children": len(pids), "children_alive": len(alive)}


def _running(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _line_count(path: Path) -> int | None:
    try:
        return len(path.read_text().splitlines())
    except OSError:
        return None
