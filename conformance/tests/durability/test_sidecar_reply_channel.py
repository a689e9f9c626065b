"""W16: the reply channel, the only place a sidecar's bearer may go.

The bootstrap descriptors must be two distinct inherited pipes, never 0-2: a
sidecar told to answer on its standard output (or on the descriptor it reads
from) refuses before reading anything, with the usage exit code, and writes
nothing there. A reply the parent can no longer receive leaves no usable
credential behind: the one just issued is revoked before the worker exits.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from test_sidecar import Sidecar, frame, request
from worker_harness import WORKER, private_dir

EXIT_USAGE = 2


def _run(argv: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*WORKER, "--sidecar", *argv], pass_fds=pass_fds,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


def test_standard_output_is_never_the_reply_descriptor(tmp_path):
    state = private_dir(tmp_path / "state")
    in_r, in_w = os.pipe()
    try:
        os.write(in_w, frame(request(state)))
        proc = _run(["--bootstrap-in-fd", str(in_r), "--bootstrap-out-fd", "1"], (in_r,))
    finally:
        os.close(in_r)
        os.close(in_w)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert proc.stdout == b""
    assert b"above 2" in proc.stderr
    assert not (state / "journal.sqlite3").exists()


@pytest.mark.parametrize("standard", ["0", "2"])
def test_other_standard_descriptors_are_refused(tmp_path, standard):
    out_r, out_w = os.pipe()
    try:
        proc = _run(["--bootstrap-in-fd", standard, "--bootstrap-out-fd", str(out_w)], (out_w,))
        os.close(out_w)
        assert os.read(out_r, 65536) == b""
    finally:
        os.close(out_r)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert b"above 2" in proc.stderr


def test_one_descriptor_cannot_carry_both_directions(tmp_path):
    state = private_dir(tmp_path / "state")
    in_r, in_w = os.pipe()
    try:
        os.write(in_w, frame(request(state)))
        proc = _run(["--bootstrap-in-fd", str(in_r), "--bootstrap-out-fd", str(in_r)], (in_r,))
    finally:
        os.close(in_r)
        os.close(in_w)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert b"distinct" in proc.stderr
    assert not (state / "journal.sqlite3").exists()


def test_a_reply_nobody_can_read_leaves_no_usable_credential(tmp_path):
    state = private_dir(tmp_path / "state")
    side = Sidecar()
    os.close(side.out_r)  # the parent is gone from the reply pipe before the worker answers
    os.write(side.in_w, frame(request(state)))
    side.close_parent_end()
    code, err = side.wait(timeout=60)
    assert code not in (0, EXIT_USAGE), err
    listed = subprocess.run([*WORKER, "credentials", "list", "--state-dir", str(state), "--json"],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [row["application_id"] for row in rows] == ["side-app"]
    assert rows[0]["state"] == "revoked"


def test_nothing_but_the_reply_leaves_the_sidecar_on_standard_output(tmp_path):
    state = private_dir(tmp_path / "state")
    side = Sidecar("--log-level", "INFO")
    reply = side.send(frame(request(state)))
    assert "bearer" in reply, reply
    side.close_parent_end()
    out, err = side.proc.communicate(timeout=60)
    assert side.proc.returncode == 0, err
    assert out == b""  # the parent's standard output may be shared: nothing goes there
    assert reply["bearer"].encode() not in err
