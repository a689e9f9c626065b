"""``dev``'s default bearer store: one owner-only file inside the private dev folder.

Development machines without an OS keyring (containers, CI, SSH boxes) still need a place
the bearer survives a restart of ``dev``, so a client holding it carries on. The file sits
in the 0700 folder ``dev`` already requires, next to the state folder whose keys could
forge any credential anyway, so it exposes nothing a reader of that folder could not
already reach. It is written 0600 and atomically, and read only when it is still a
regular, owner-only file of ours (never through a link).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..state import StateError, write_private_file


def bearer_file(public_api_dir: Path, application_id: str) -> Path:
    """Where ``dev`` keeps ``application_id``'s bearer: ``DIR/<application>.bearer``."""
    return public_api_dir / f"{application_id}.bearer"


def read_bearer_file(path: Path) -> str | None:
    """The stored bearer, or ``None`` when there is no file yet.

    Raises:
        StateError: the path is a link, not a regular file, another user's, or readable
            by anyone but its owner (exit code 4, like any unsafe state path).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError(f"cannot read the bearer file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise StateError(f"the bearer file is not a regular file: {path}")
        if st.st_uid != os.getuid():
            raise StateError(f"the bearer file is owned by another user: {path}")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise StateError(f"the bearer file must have mode 0600: {path}")
        text = f.read(4096).decode("ascii", errors="replace").strip()
    return text or None


def write_bearer_file(path: Path, bearer: str) -> None:
    """Replace the file atomically with ``bearer`` and one newline (mode 0600)."""
    write_private_file(path, bearer.encode("ascii") + b"\n")
