"""Shutdown removes discovery files only while they are still this worker's own (W2).

Each case swaps something in the public API folder between start and stop for
an object with the very same bytes: a symbolic link, a hard link, a whole
folder. The worker must follow no link and remove nothing it did not write.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

FILES = ("endpoint.json", "certificate.pem")


@pytest.mark.parametrize("name", FILES)
def test_a_symlink_to_identical_bytes_is_left_alone(make_worker, tmp_path, name):
    worker = make_worker()
    target = tmp_path / f"copy-{name}"
    shutil.copy2(worker.public / name, target)
    os.chmod(target, 0o600)
    (worker.public / name).unlink()
    (worker.public / name).symlink_to(target)
    worker.stop()
    assert (worker.public / name).is_symlink() and target.exists()
    other = next(n for n in FILES if n != name)
    assert not (worker.public / other).exists()  # its own file still goes


@pytest.mark.parametrize("name", FILES)
def test_a_hard_link_is_left_alone(make_worker, tmp_path, name):
    worker = make_worker()
    os.link(worker.public / name, tmp_path / f"link-{name}")
    worker.stop()
    assert (worker.public / name).exists() and (tmp_path / f"link-{name}").exists()


def test_a_folder_swapped_for_a_symlink_is_left_alone(make_worker, tmp_path):
    worker = make_worker()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    for name in FILES:
        shutil.copy2(worker.public / name, elsewhere / name)
    moved = tmp_path / "moved-public"
    worker.public.rename(moved)
    worker.public.symlink_to(elsewhere)
    worker.stop()
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(FILES)
    worker.public.unlink()
    moved.rename(worker.public)


def test_files_rewritten_by_another_writer_are_left_alone(make_worker):
    worker = make_worker()
    endpoint = worker.public / "endpoint.json"
    changed = endpoint.read_text().replace('"pid": ', '"pid": 1')
    endpoint.write_text(changed)
    worker.stop()
    assert endpoint.read_text() == changed


@pytest.mark.parametrize("name", FILES)
def test_a_file_whose_mode_changed_is_left_alone(make_worker, name):
    # The same bytes under another mode were written (or loosened) by someone else.
    worker = make_worker()
    os.chmod(worker.public / name, 0o644)
    worker.stop()
    assert (worker.public / name).exists()
    other = next(n for n in FILES if n != name)
    assert not (worker.public / other).exists()


def test_a_file_rewritten_to_the_same_length_is_left_alone(make_worker):
    # Only the bytes differ: same inode, owner, mode, link count and size.
    worker = make_worker()
    endpoint = worker.public / "endpoint.json"
    original = endpoint.read_text()
    changed = original[:-2] + ("A" if original[-2] != "A" else "B") + original[-1:]
    assert len(changed) == len(original) and changed != original
    endpoint.write_text(changed)
    worker.stop()
    assert endpoint.read_text() == changed


@pytest.mark.parametrize("name", FILES)
def test_a_folder_in_place_of_a_discovery_file_stops_start_up_cleanly(make_worker, name):
    # The worker used to stop with "unexpected failure (IsADirectoryError)" and, for
    # endpoint.json, leave the certificate it had just published behind.
    worker = make_worker(start=False)
    worker.public.mkdir(mode=0o700, exist_ok=True)
    (worker.public / name).mkdir()
    out = subprocess.run([sys.executable, "-m", "colossus_reference_worker.cli", "serve",
                          "--public-api-dir", str(worker.public)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 4, out.stderr  # the public folder is unusable
    assert str(worker.public / name) in out.stderr and "unexpected" not in out.stderr
    assert sorted(p.name for p in worker.public.iterdir()) == sorted([name, "state"])
    (worker.public / name).rmdir()
    worker.start()  # nothing was left locked
    assert worker.descriptor["endpoint"].startswith("https://127.0.0.1:")
