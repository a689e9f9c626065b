"""The private state folder: secrets, the journal and the single-instance lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
from pathlib import Path


class StateError(Exception):
    """The state folder is unusable; the message names no secret."""


class StateLocked(StateError):
    """Another worker process (or an enrolment) holds the state folder."""


def ensure_private_dir(path: Path, *, create: bool = True) -> None:
    """Make sure ``path`` is a directory owned by us with mode 0700."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise StateError(f"folder does not exist: {path}") from None
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.mkdir(path, 0o700)
        st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise StateError(f"not a directory (or a symbolic link): {path}")
    if st.st_uid != os.getuid():
        raise StateError(f"folder is owned by another user: {path}")
    if stat.S_IMODE(st.st_mode) != 0o700:
        raise StateError(f"folder must have mode 0700: {path}")


def write_private_file(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically with ``data`` (mode 0600, fsynced)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_private_file(path: Path, max_bytes: int = 65536) -> bytes | None:
    """Read a 0600 file we own; ``None`` when absent. No links are followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise StateError(f"unsafe state file: {path.name}")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise StateError(f"state file must have mode 0600: {path.name}")
        return f.read(max_bytes + 1)[:max_bytes]


# The secrets that what a state folder already holds depends on, with what a new one would
# silently break. Each is created together with the folder, before its journal; once the
# journal exists, a missing one was lost, and minting a replacement would lose more.
_BOUND_TO_THE_JOURNAL = {
    "tls-seed": "give the worker a new instance ID and certificate pin, which no "
                "provisioned client trusts",
    "journal-key": "fail the check of every journal record",
    "verifier-key": "refuse every enrolled credential",
}
JOURNAL_NAME = "journal.sqlite3"


def secret_file(path: Path, size: int = 32) -> bytes:
    """Return the random secret stored at ``path``, creating it on first use.

    A secret the journal depends on is created only while the folder holds no journal;
    later its absence is reported instead of papered over with a new one.
    """
    data = read_private_file(path)
    if data is None:
        consequence = _BOUND_TO_THE_JOURNAL.get(path.name)
        if consequence is not None and os.path.lexists(path.parent / JOURNAL_NAME):
            raise StateError(
                f"{path} is missing although the folder holds a journal; restore it from a "
                f"backup of this folder (a new one would {consequence})")
        write_private_file(path, secrets.token_bytes(size))
        data = read_private_file(path)
        assert data is not None
    if len(data) != size:
        raise StateError(f"corrupt state file: {path.name}")
    return data


class StateLock:
    """An exclusive, advisory lock on the state folder held for a process lifetime."""

    def __init__(self, state_dir: Path) -> None:
        self._path = state_dir / "worker.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StateLocked(
                "the state folder is in use by a running worker; stop it first"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
