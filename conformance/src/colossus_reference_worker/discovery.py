"""Discovery files (W2): ``endpoint.json`` and ``certificate.pem`` in the public API folder.

Both are written atomically with mode 0600 into a 0700 folder. On shutdown a
file is removed only if it is still exactly what this instance wrote: it is
opened without following links relative to a held folder descriptor and
checked for type, owner, link count and content before the unlink.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

from .config import API_VERSION
from .state import StateError, ensure_private_dir, write_private_file

ENDPOINT_FILE = "endpoint.json"
CERTIFICATE_FILE = "certificate.pem"


def endpoint_url(host: str, port: int) -> str:
    literal = f"[{host}]" if ":" in host else host
    return f"https://{literal}:{port}"


class DiscoveryFiles:
    """Publishes and later withdraws one instance's discovery files."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._written: dict[str, bytes] = {}

    def publish(
        self, *, endpoint: str, instance_id: str, certificate_sha256: str, certificate_pem: bytes
    ) -> None:
        ensure_private_dir(self._folder)
        descriptor = {
            "endpoint": endpoint,
            "instance_id": instance_id,
            "pid": os.getpid(),
            "api_version": API_VERSION,
            "certificate_sha256": certificate_sha256,
        }
        endpoint_bytes = (json.dumps(descriptor, indent=2) + "\n").encode()
        # The certificate first, so a reader that sees the new descriptor finds its leaf.
        for name, data in ((CERTIFICATE_FILE, certificate_pem), (ENDPOINT_FILE, endpoint_bytes)):
            try:
                write_private_file(self._folder / name, data)
            except OSError as exc:
                # Say which file, and take back what was already published: a certificate
                # without its descriptor is not a worker anyone can reach.
                self.withdraw()
                raise StateError(f"cannot publish {self._folder / name}: "
                                 f"{exc.strerror or exc}") from None
            self._written[name] = data

    def withdraw(self) -> None:
        """Remove the files that are still ours; leave anything else alone."""
        if not self._written:
            return
        try:
            dir_fd = os.open(self._folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return
        try:
            for name in (ENDPOINT_FILE, CERTIFICATE_FILE):
                expected = self._written.get(name)
                if expected is not None and _still_ours(dir_fd, name, expected):
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
            self._written = {}


def _still_ours(dir_fd: int, name: str, expected: bytes) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.getuid()
            or st.st_nlink != 1
            or stat.S_IMODE(st.st_mode) != 0o600
            or st.st_size != len(expected)
        ):
            return False
        return os.read(fd, len(expected) + 1) == expected
    finally:
        os.close(fd)
