"""Owner-only files and folders: what the discovery files must be before they are read.

A file is read only when it is a regular file owned by the current user, closed to group
and others, within its size limit, and reached without a final symbolic link; its
folder must be a real directory owned by the user and closed to others.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .._errors import DescriptorError


def read_owner_only_file(path: Path, limit: int, error: type[Exception]) -> bytes:
    """Reads a regular, owner-only file without following a final symbolic link.

    The file is opened non-blocking, so a FIFO or device put in its place cannot stall the
    caller, and its type is checked on the open descriptor (no window between check and
    use). Errors name the path: it is not secret, and it tells the user what to fix.
    """
    flags = (
        os.O_RDONLY
        | os.O_NONBLOCK
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NOCTTY", 0)
    )
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{path} does not exist") from None
    except OSError:
        raise error(f"{path} cannot be opened (or is a symbolic link)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path} is not a regular file")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise error(f"{path} is not owned by the current user")
        if info.st_mode & 0o077:
            raise error(
                f"{path} is readable or writable by others "
                f"(mode {stat.S_IMODE(info.st_mode):04o}, must be 0600)"
            )
        if info.st_size > limit:
            raise error(f"{path} is larger than {limit} bytes")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise error(f"{path} is larger than {limit} bytes")
        return b"".join(chunks)
    except BlockingIOError:
        raise error(f"{path} cannot be read without waiting") from None
    finally:
        os.close(fd)


def check_public_api_dir(directory: Path) -> None:
    """The discovery folder must be a real directory owned by us and closed to others."""
    try:
        info = os.lstat(directory)
    except OSError:
        raise DescriptorError(f"the public API directory {directory} does not exist") from None
    if not stat.S_ISDIR(info.st_mode):
        raise DescriptorError(f"the public API directory {directory} is not a directory")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise DescriptorError(
            f"the public API directory {directory} is not owned by the current user"
        )
    if info.st_mode & 0o077:
        raise DescriptorError(
            f"the public API directory {directory} is open to others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}, must be 0700)"
        )
