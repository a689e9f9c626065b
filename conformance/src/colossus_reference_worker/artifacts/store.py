"""Artifact storage: content-addressed blobs plus an owner-scoped index.

Layout under the worker's state folder (all 0700 folders, 0600 files)::

    artifacts/index.sqlite3        one row per artifact: ID, owner, media type,
                                   size, SHA-256, display name, creation time
    artifacts/blobs/ab/abcdef...   the bytes, named by their SHA-256
    artifacts/tmp/*.part           uploads in progress; cleared at start-up

An upload streams into a private temporary file while hashing. Only when the
received length and digest equal the declared ones is the file flushed to
disk, renamed to its content address and the index row committed; any other
ending deletes the temporary file, so a rejected upload leaves nothing behind.
Two applications uploading the same bytes share one blob but get separate
index rows, and each sees only its own.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import errno
import hashlib
import os
import re
import secrets
import sqlite3
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import StorageFull, StorageUnavailable
from ..state import StateError

_SHA256 = re.compile(r"[0-9a-f]{64}")
# type "/" subtype, RFC 6838 restricted-name characters, lower or upper case.
_MEDIA_TYPE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,62}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,62}"
)
_ARTIFACT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_MEDIA_TYPE = 127
MAX_DISPLAY_NAME_BYTES = 255
_SQLITE_FULL = 13  # SQLite's primary result code for a full database or disk


class ManifestError(ValueError):
    """A manifest member is malformed; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class TooLargeError(ValueError):
    """The declared size exceeds the configured maximum."""


class IntegrityError(ValueError):
    """The received bytes do not match the declared size or digest."""


@dataclass(frozen=True, slots=True)
class ArtifactMeta:
    """One stored artifact, as its owner sees it."""

    artifact_id: str
    application_id: str
    media_type: str
    size_bytes: int
    sha256: str
    display_name: str
    create_time: datetime.datetime

    @property
    def is_image(self) -> bool:
        return self.media_type.lower().startswith("image/")


@dataclass(frozen=True, slots=True)
class Manifest:
    """A validated upload declaration."""

    media_type: str
    size_bytes: int
    sha256: str
    display_name: str


def check_manifest(
    media_type: str, size_bytes: int, sha256: str, display_name: str, *, max_bytes: int
) -> Manifest:
    """Validate the members of an ``ArtifactManifest``."""
    if len(media_type) > MAX_MEDIA_TYPE or not _MEDIA_TYPE.fullmatch(media_type):
        raise ManifestError("manifest.media_type", "media_type must be type/subtype")
    if not _SHA256.fullmatch(sha256):
        raise ManifestError("manifest.sha256", "sha256 must be 64 lower-case hex characters")
    if (len(display_name.encode("utf-8")) > MAX_DISPLAY_NAME_BYTES
            or any(c in display_name for c in "/\\\x00")
            or display_name in (".", "..")
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in display_name)):
        raise ManifestError("manifest.display_name",
                            "display_name must be at most 255 bytes with no path separators")
    if size_bytes > max_bytes:
        raise TooLargeError(f"artifact exceeds {max_bytes} bytes")
    return Manifest(media_type, size_bytes, sha256, display_name)


@contextlib.contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    """Turns a failing disk into the worker's storage errors, as the journal does.

    A full disk (or quota) becomes :class:`StorageFull`, any other write failure
    :class:`StorageUnavailable`: callers get the same retryable UNAVAILABLE as for
    CreateRun instead of an internal error.
    """
    try:
        yield
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        raise (StorageFull if full else StorageUnavailable)(
            f"{what}: {exc.strerror or exc}") from None
    except sqlite3.OperationalError as exc:
        full = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == _SQLITE_FULL
        raise (StorageFull if full else StorageUnavailable)(f"{what}: {exc}") from None


def _new_artifact_id() -> str:
    return "art_" + base64.urlsafe_b64encode(secrets.token_bytes(18)).decode().rstrip("=")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _private_dir(path: Path) -> None:
    if path.is_symlink():
        raise StateError(f"unsafe artifact storage folder: {path} is a symbolic link")
    path.mkdir(mode=0o700, parents=False, exist_ok=True)
    if path.is_symlink() or not path.is_dir():
        raise StateError(f"unsafe artifact storage folder: {path} is not a plain directory")
    os.chmod(path, 0o700)


def _private_file(path: Path) -> None:
    """Create ``path`` owner-only, or make an existing one so, never through a link.

    SQLite follows links when it opens a database, so the index file is opened here
    first, as the journal is: a link put in its place would otherwise have SQLite (and
    the mode change) act on whatever file it points at.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StateError(f"cannot open {path}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StateError(f"unsafe artifact index: {path} is not a regular file")
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


class Upload:
    """One upload in progress. Call :meth:`write` per chunk, then :meth:`commit`."""

    def __init__(self, store: ArtifactStore, application_id: str, manifest: Manifest) -> None:
        self._store = store
        self.application_id = application_id
        self.manifest = manifest
        self._hash = hashlib.sha256()
        self.received = 0
        self._path = store.tmp_dir / f"{secrets.token_hex(16)}.part"
        with _storage_errors("cannot start an artifact upload"):
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self._file: BinaryIO | None = os.fdopen(fd, "wb")

    def write(self, chunk: bytes) -> None:
        """Append bytes; refuses as soon as more than the declared size arrives."""
        if self._file is None:
            raise RuntimeError("upload already finished")
        if self.received + len(chunk) > self.manifest.size_bytes:
            self.abort()
            raise IntegrityError("more bytes than the declared size")
        try:
            with _storage_errors("cannot store an artifact upload"):
                self._file.write(chunk)
        except BaseException:
            self.abort()
            raise
        self._hash.update(chunk)
        self.received += len(chunk)

    def commit(self) -> ArtifactMeta:
        """Check length and digest, then store durably; on mismatch nothing is kept."""
        if self._file is None:
            raise RuntimeError("upload already finished")
        if (self.received != self.manifest.size_bytes
                or self._hash.hexdigest() != self.manifest.sha256):
            self.abort()
            raise IntegrityError("received bytes do not match the manifest")
        file, self._file = self._file, None
        with _storage_errors("cannot store an artifact"):
            try:
                try:
                    file.flush()
                    os.fsync(file.fileno())
                finally:
                    with contextlib.suppress(OSError):  # a failed flush fails close too
                        file.close()
                self._store.adopt_blob(self._path, self.manifest.sha256)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._path)
            return self._store.insert(self.application_id, self.manifest)

    def abort(self) -> None:
        """Drop everything received so far. Safe to call more than once."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):  # unwritten buffered bytes on a full disk
                file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path)


class ArtifactStore:
    """Blobs and their index under ``<state_dir>/artifacts``."""

    def __init__(self, state_dir: Path, *, max_artifact_bytes: int) -> None:
        self.root = Path(state_dir) / "artifacts"
        self.blob_dir = self.root / "blobs"
        self.tmp_dir = self.root / "tmp"
        self.max_artifact_bytes = max_artifact_bytes
        for folder in (self.root, self.blob_dir, self.tmp_dir):
            _private_dir(folder)
        for leftover in self.tmp_dir.glob("*.part"):
            leftover.unlink(missing_ok=True)
        self._lock = threading.Lock()
        _private_file(self.root / "index.sqlite3")
        self._db = sqlite3.connect(
            self.root / "index.sqlite3", isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(
            """CREATE TABLE IF NOT EXISTS artifacts (
                 artifact_id TEXT PRIMARY KEY,
                 application_id TEXT NOT NULL,
                 media_type TEXT NOT NULL,
                 size_bytes INTEGER NOT NULL,
                 sha256 TEXT NOT NULL,
                 display_name TEXT NOT NULL,
                 create_time_us INTEGER NOT NULL
               )"""
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- writing ------------------------------------------------------------------

    def begin_upload(self, application_id: str, manifest: Manifest) -> Upload:
        return Upload(self, application_id, manifest)

    def blob_path(self, sha256: str) -> Path:
        if not _SHA256.fullmatch(sha256):
            raise ValueError("not a SHA-256 digest")
        return self.blob_dir / sha256[:2] / sha256

    def adopt_blob(self, tmp: Path, sha256: str) -> None:
        """Move a verified temporary file to its content address.

        The verified file always takes the address, even when a blob of that
        length is already there: a blob damaged on disk would otherwise keep
        failing every download of its content. Readers that opened the old file
        keep reading it; the rename is atomic.
        """
        target = self.blob_path(sha256)
        _private_dir(target.parent)
        with self._lock:
            os.replace(tmp, target)
            _fsync_dir(target.parent)

    def insert(self, application_id: str, manifest: Manifest) -> ArtifactMeta:
        now = datetime.datetime.now(datetime.timezone.utc)
        meta = ArtifactMeta(
            artifact_id=_new_artifact_id(),
            application_id=application_id,
            media_type=manifest.media_type,
            size_bytes=manifest.size_bytes,
            sha256=manifest.sha256,
            display_name=manifest.display_name,
            create_time=now,
        )
        micros = int(now.timestamp() * 1_000_000)
        with self._lock:
            self._db.execute(
                "INSERT INTO artifacts VALUES (?, ?, ?, ?, ?, ?, ?)",
                (meta.artifact_id, application_id, meta.media_type, meta.size_bytes,
                 meta.sha256, meta.display_name, micros),
            )
        return meta

    # -- reading -------------------------------------------------------------------

    def lookup(self, application_id: str, artifact_id: str) -> ArtifactMeta | None:
        """The artifact if it exists and belongs to ``application_id``, else ``None``."""
        if not _ARTIFACT_ID.fullmatch(artifact_id):
            return None
        with self._lock:
            row = self._db.execute(
                "SELECT artifact_id, application_id, media_type, size_bytes, sha256,"
                " display_name, create_time_us FROM artifacts"
                " WHERE artifact_id = ? AND application_id = ?",
                (artifact_id, application_id),
            ).fetchone()
        if row is None:
            return None
        created = datetime.datetime.fromtimestamp(row[6] / 1_000_000, datetime.timezone.utc)
        return ArtifactMeta(
            artifact_id=row[0], application_id=row[1], media_type=row[2],
            size_bytes=row[3], sha256=row[4], display_name=row[5], create_time=created,
        )

    def open_blob(self, meta: ArtifactMeta) -> BinaryIO:
        """Open the bytes of ``meta`` for reading; refuses a blob of the wrong length."""
        fd = os.open(self.blob_path(meta.sha256), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        handle = os.fdopen(fd, "rb")
        if os.fstat(fd).st_size != meta.size_bytes:
            handle.close()
            raise IntegrityError("stored blob has the wrong length")
        return handle
