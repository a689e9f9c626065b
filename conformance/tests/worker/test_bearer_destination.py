"""The one-time bearer goes only to a pipe, a socket or the credential store (W3).

``--bearer-fd`` naming a descriptor open on a regular file would put the bearer
on disk; one on a terminal would show it. Both are refused before any
credential is issued, for enrolment, rotation and ``dev`` alike.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest
from cli_helpers import CLI

ENROLL = ("--enroll-application", "app9", "--scope", "runs:read", "--role", "default")


def _run(worker, fd: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--bearer-fd", str(fd)], pass_fds=(fd,),
                          capture_output=True, text=True, timeout=60)


def _credentials(worker) -> list[dict[str, str]]:
    out = subprocess.run([*CLI, "--public-api-dir", str(worker.public), "--list-credentials",
                          "--output", "json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_a_regular_file_is_refused_before_anything_is_issued(make_worker, tmp_path):
    worker = make_worker(apps=("app1",), start=False)
    before = _credentials(worker)
    target = tmp_path / "bearer.txt"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        out = _run(worker, fd, "--public-api-dir", str(worker.public), *ENROLL)
        rotate = _run(worker, fd, "--public-api-dir", str(worker.public),
                      "--rotate-credential", before[0]["credential_id"])
        dev = _run(worker, fd, "dev", "--public-api-dir", str(worker.public))
    finally:
        os.close(fd)
    for result in (out, rotate, dev):
        assert result.returncode == 2, result.stderr
        assert "--bearer-fd" in result.stderr and "pipe" in result.stderr
    assert target.read_bytes() == b""
    assert _credentials(worker) == before


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_a_pipe_or_a_socket_receives_the_bearer(make_worker, kind):
    worker = make_worker(apps=(), start=False)
    if kind == "pipe":
        read_fd, write_fd = os.pipe()
        reader = None
    else:
        reader, writer = socket.socketpair()
        read_fd, write_fd = reader.fileno(), os.dup(writer.fileno())
        writer.close()
    try:
        out = _run(worker, write_fd, "--public-api-dir", str(worker.public), *ENROLL)
        os.close(write_fd)
        assert out.returncode == 0, out.stderr
        received = b""
        while chunk := os.read(read_fd, 4096):
            received += chunk
        # Exactly the bearer and one newline, then end-of-file (the documented format).
        bearer = received.decode()[:-1]
        assert received == bearer.encode() + b"\n" and len(bearer) == 47
        assert bearer.startswith("cb1_") and bearer not in out.stdout + out.stderr
    finally:
        if reader is not None:
            reader.close()
        else:
            os.close(read_fd)


def test_two_destinations_are_refused_before_anything_is_issued(make_worker):
    worker = make_worker(apps=("app1",), start=False)
    before = _credentials(worker)
    read_fd, write_fd = os.pipe()
    try:
        enrol = _run(worker, write_fd, "--public-api-dir", str(worker.public), *ENROLL,
                     "--keyring-service", "colossus-test")
        subcommand = _run(worker, write_fd, "enroll", "app9", "--public-api-dir",
                          str(worker.public), "--scope", "runs:read",
                          "--keyring-service", "colossus-test")
        rotate = _run(worker, write_fd, "--public-api-dir", str(worker.public),
                      "--rotate-credential", before[0]["credential_id"],
                      "--keyring-service", "colossus-test")
        os.close(write_fd)
        write_fd = -1
        assert os.read(read_fd, 4096) == b""  # no bearer went down the pipe
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
    for result in (enrol, subcommand, rotate):
        assert result.returncode == 2, result.stderr
        assert "exactly one bearer destination" in result.stderr
    assert _credentials(worker) == before
