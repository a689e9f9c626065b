"""Read-only access to a state folder, for ``runs`` and ``journal verify``.

These subcommands read the state folder directly instead of calling the API:
they work while the worker is stopped (the usual time to inspect or verify a
journal), need no enrolled credential, and see every application's runs, which
the API deliberately never shows one caller.

Nothing here writes to the state folder:

* while a worker holds the folder's lock, the journal is opened through
  SQLite's read-only URI (``mode=ro``); the worker keeps the write-ahead log
  and its index alive, and readers only take SQLite's shared read locks;
* while no worker runs, SQLite would create ``-wal``/``-shm`` files even for a
  read-only connection, so the journal (and any write-ahead log a crash left
  behind) is copied into a private temporary folder under a shared lock and
  read there. A worker that starts meanwhile waits for nothing: it takes its
  lock only after the copy, or fails with "in use" during the few milliseconds
  of copying.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import JournalIntegrityError
from ..journal import Journal
from ..journal.heads import verify_checkpoint
from ..state import StateError

JOURNAL_FILE = "journal.sqlite3"
KEY_FILE = "journal-key"
_SIDE_FILES = ("-wal",)


class ReadOnlyJournal(Journal):
    """A :class:`Journal` on a connection that cannot write.

    The checkpoint is compared as opening a writable journal does, but a journal
    without one is reported instead of being sealed.
    """

    def __init__(self, path: Path, key: bytes, *, uri: str) -> None:
        # Deliberately not calling Journal.__init__: it creates and upgrades the file.
        self._set_up(path, key)
        with self._sqlite_errors():
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute("PRAGMA query_only=ON")
            # One read transaction for the object's life: every query sees the same
            # snapshot, even while a serving worker appends.
            self._db.execute("BEGIN")
            self._check_checkpoint()
        # This object never writes, so it never builds the open-run index and its
        # view of the files never moves.
        self._seen = self._fingerprint()

    def _check_checkpoint(self, *, sealed_before: bool = True) -> None:
        count, position = self._db.execute(
            "SELECT COUNT(*), COALESCE(MAX(position), 0) FROM records").fetchone()
        row = self._db.execute("SELECT records, position, seal FROM checkpoint").fetchone()
        if row is None:
            raise JournalIntegrityError(
                f"{self._path}: no sealed checkpoint (start the worker once to seal it)")
        verify_checkpoint(self._path, self._key, row, (count, position))

    def open_index_intact(self) -> bool:
        """As for a journal; one written before the index had a seal has nothing to check
        (the worker seals it as found at its next start)."""
        if self._sql("SELECT 1 FROM sqlite_master WHERE name = 'open_seal'").fetchone() is None:
            return True
        return super().open_index_intact()

    def all_streams(self) -> list[str]:
        """Every stream name present, in order of first appearance."""
        rows = self._sql("SELECT stream FROM records GROUP BY stream ORDER BY MIN(position)")
        return [r[0] for r in rows.fetchall()]

    def record_count(self) -> int:
        (count,) = self._sql("SELECT COUNT(*) FROM records").fetchone()
        return int(count)


def check_folder(state_dir: Path) -> None:
    """The folder exists, is ours, is private, and looks like a worker's state folder."""
    try:
        st = os.stat(state_dir)
    except FileNotFoundError:
        raise StateError(f"state folder does not exist: {state_dir}") from None
    except OSError as exc:
        raise StateError(f"state folder cannot be read: {state_dir}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise StateError(f"not a directory: {state_dir}")
    if st.st_uid != os.getuid():
        raise StateError(f"folder is owned by another user: {state_dir}")
    if stat.S_IMODE(st.st_mode) != 0o700:
        raise StateError(f"folder must have mode 0700: {state_dir}")
    if not os.access(state_dir, os.R_OK | os.X_OK):
        raise StateError(f"state folder cannot be read: {state_dir}")
    missing = [name for name in (JOURNAL_FILE, KEY_FILE)
               if not os.path.lexists(state_dir / name)]
    if missing:
        raise StateError(
            f"not a reference worker state folder (no {' or '.join(missing)}): {state_dir}; "
            "expected the folder given to --state-dir (or PUBLIC_API_DIR/state)")
    for name in (JOURNAL_FILE, JOURNAL_FILE + "-wal"):
        _refuse_unless_regular(state_dir / name)


def _refuse_unless_regular(path: Path) -> os.stat_result | None:
    """The entry's own status, refusing a link or anything but a plain file.

    ``serve`` opens the journal without following links (SQLite does the same for its
    write-ahead log), so reading through a link here would inspect a file the worker
    itself would never use. Returns None when the entry does not exist.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise StateError(f"unsafe state file: {path} is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise StateError(f"unsafe state file: {path} is not a regular file")
    return st


def _copy_without_links(source: Path, target: Path) -> None:
    """Copies ``source`` (never through a link) into a new private file ``target``."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateError(f"unsafe state file: {source} is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            raise StateError(f"unsafe state file: {source} is not a regular file")
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(out, "wb") as dst:
            shutil.copyfileobj(src, dst)


def read_secret(state_dir: Path, name: str = KEY_FILE) -> bytes:
    """A 32-byte secret of the state folder, read without creating anything."""
    path = state_dir / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise StateError(f"unsafe state file: {path}")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise StateError(f"state file must have mode 0600: {path}")
        key = f.read(33)
    if len(key) != 32:
        raise StateError(f"corrupt state file: {path}")
    return key


@contextlib.contextmanager
def _worker_stopped(state_dir: Path) -> Iterator[bool]:
    """Yield whether no worker holds the folder, keeping it that way meanwhile.

    A shared lock on the existing lock file (opened read-only, never created)
    stops a worker from starting while it is held.
    """
    try:
        fd = os.open(state_dir / "worker.lock", os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield True
        return
    except OSError as exc:
        raise StateError(f"cannot read {state_dir / 'worker.lock'}: {exc.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open_in_place(source: Path, key: bytes) -> ReadOnlyJournal:
    """The serving worker's own journal file, read-only, refusing one swapped for a link.

    SQLite's read-only open follows links, so the entry is checked before and after:
    the file opened must be the plain file seen before opening.
    """
    before = _refuse_unless_regular(source)
    journal = ReadOnlyJournal(source, key, uri=source.as_uri() + "?mode=ro")
    after = _refuse_unless_regular(source)
    if before is None or after is None or (before.st_dev, before.st_ino) != (
            after.st_dev, after.st_ino):
        journal.close()
        raise StateError(f"unsafe state file: {source} was replaced while it was opened")
    return journal


@contextlib.contextmanager
def open_read_only(state_dir: Path) -> Iterator[tuple[ReadOnlyJournal, bool]]:
    """The state folder's journal, read-only; yields it and whether a worker is serving."""
    check_folder(state_dir)
    key = read_secret(state_dir)
    source = state_dir / JOURNAL_FILE
    with contextlib.ExitStack() as stack:
        with _worker_stopped(state_dir) as stopped:
            if stopped:
                scratch = Path(stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="colossus-inspect-")))
                target = scratch / JOURNAL_FILE
                try:
                    _copy_without_links(source, target)
                    for suffix in _SIDE_FILES:
                        side = source.with_name(source.name + suffix)
                        if os.path.lexists(side):
                            _copy_without_links(side, target.with_name(target.name + suffix))
                except OSError as exc:
                    raise StateError(f"cannot read {source}: {exc.strerror}") from None
                uri = target.as_uri()  # our private copy: SQLite may add its side files
        journal = ReadOnlyJournal(source, key, uri=uri) if stopped else _open_in_place(source, key)
        stack.callback(journal.close)
        yield journal, not stopped
