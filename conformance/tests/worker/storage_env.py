"""Run a worker with its state folder on a small tmpfs or a read-only mount.

The worker process is started inside a private mount namespace (``unshare -m``
as root, ``unshare -rm`` through a user namespace otherwise), so the test needs
no privileges on the host and leaves no mount behind. The test reaches the
tmpfs through ``/proc/<pid>/root``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

WORKER = [sys.executable, "-m", "colossus_reference_worker.cli"]


@functools.cache
def namespace_prefix() -> tuple[list[str] | None, str]:
    """The argv prefix for a private mount namespace, or None and the reason why not."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None, "unshare(1) is not installed"
    candidates = ([[unshare, "-m"]] if os.geteuid() == 0 else []) + [[unshare, "-rm"]]
    errors = []
    for prefix in candidates:
        probe = subprocess.run([*prefix, "sh", "-c", "mount -t tmpfs tmpfs /mnt 2>&1 || "
                                "mount -t tmpfs tmpfs /tmp"], capture_output=True, text=True)
        if probe.returncode == 0:
            return prefix, ""
        errors.append(f"{' '.join(prefix)}: {(probe.stdout + probe.stderr).strip()}")
    return None, "cannot mount in a private namespace (" + "; ".join(errors) + ")"


def start_on_tmpfs(public: Path, state: Path, seed: Path, size: str, log: Path,
                   *args: str) -> subprocess.Popen[bytes]:
    """A worker serving ``public`` with ``state`` a fresh ``size`` tmpfs holding ``seed``."""
    prefix, reason = namespace_prefix()
    assert prefix is not None, reason
    script = ('mount -t tmpfs -o "size=$1,mode=0700" tmpfs "$2" && cp -a "$3"/. "$2"/ '
              '&& shift 3 && exec "$@"')
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [*prefix, "sh", "-c", script, "sh", size, str(state), str(seed), *WORKER,
             "--public-api-dir", str(public), "--log-level", "INFO", *args],
            stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (public / "endpoint.json").exists():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "worker did not start"
        time.sleep(0.02)
    return proc


def run_read_only(public: Path, state: Path) -> subprocess.CompletedProcess[str]:
    """Start a worker whose state folder is mounted read-only; returns how it exited."""
    prefix, reason = namespace_prefix()
    assert prefix is not None, reason
    script = ('mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"')
    return subprocess.run(
        [*prefix, "sh", "-c", script, "sh", str(state), *WORKER, "--public-api-dir", str(public)],
        capture_output=True, text=True, timeout=60)


def fill(folder: Path) -> Path:
    """Write a file into ``folder`` until its file system is full; returns the file."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1 << 8, 1):
            chunk = bytes(size)
            try:
                while True:
                    os.write(fd, chunk)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler
