"""Discovery files are replaced, never rewritten in place (W2).

A client may read ``endpoint.json`` while a restarted worker publishes a new one: it
must see the old file or the new one whole, never a truncated mix. A planted writer
that truncated and rewrote the file in place passed the suite; here a reader that
opened the old file keeps reading the old bytes, and nothing else is left behind.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from colossus_reference_worker.discovery import CERTIFICATE_FILE, ENDPOINT_FILE, DiscoveryFiles


def _publish(folder: Path, port: int) -> None:
    DiscoveryFiles(folder).publish(endpoint=f"https://127.0.0.1:{port}", instance_id="inst_x",
                                   certificate_sha256="0" * 64,
                                   certificate_pem=f"pem {port}\n".encode())


def test_republishing_replaces_each_file_atomically(tmp_path: Path) -> None:
    folder = tmp_path / "public"
    _publish(folder, 1111)
    held = {name: open(folder / name, "rb") for name in (ENDPOINT_FILE, CERTIFICATE_FILE)}  # noqa: SIM115
    try:
        before = {name: handle.read() for name, handle in held.items()}
        _publish(folder, 2222)
        for name, handle in held.items():
            handle.seek(0)
            assert handle.read() == before[name], f"{name} was rewritten in place"
            now = (folder / name).read_bytes()
            assert now != before[name] and b"2222" in now
            assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o600
    finally:
        for handle in held.values():
            handle.close()
    assert sorted(os.listdir(folder)) == sorted([ENDPOINT_FILE, CERTIFICATE_FILE])
