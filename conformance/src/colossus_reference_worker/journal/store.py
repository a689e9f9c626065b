"""SQLite storage of journal streams.

Only ``INSERT`` ever touches the ``records`` table: triggers refuse updates
and deletes, and ``UNIQUE(stream, version)`` turns a concurrent append to the
same stream position into :class:`ConcurrencyConflict` (optimistic
concurrency). Reads come in two strengths:

* :meth:`Journal.tail` / :meth:`Journal.record` check the hashes of the few
  records they return and the links between them (the cheap mutation path);
* :meth:`Journal.read_stream` walks a stream from its first record and checks
  every hash and every link (a full, verified read).

Every append also updates the stream's sealed head and the journal's sealed
checkpoint (:mod:`.heads`) in the same transaction; reads check that a stream
ends at its head, and opening the journal checks the checkpoint, so dropping a
stream's newest records is detected too.

Any mismatch raises :class:`~colossus_reference_worker.errors.JournalIntegrityError`.
SQLite failures are translated once, here: a damaged file is an integrity
failure, a full disk :class:`~colossus_reference_worker.errors.StorageFull`,
a read-only or failing one :class:`~colossus_reference_worker.errors.StorageUnavailable`.
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import JournalIntegrityError, StorageFull, StorageUnavailable
from .heads import (
    HEADS_SCHEMA,
    checkpoint_seal,
    head_seal,
    open_member,
    open_set_seal,
    seal_matches,
    verify_checkpoint,
    xor_bytes,
)
from .records import GENESIS, Record, canonical_json, record_hash

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    position  INTEGER PRIMARY KEY AUTOINCREMENT,
    stream    TEXT    NOT NULL,
    version   INTEGER NOT NULL,
    kind      TEXT    NOT NULL,
    payload   TEXT    NOT NULL,
    prev_hash BLOB    NOT NULL,
    hash      BLOB    NOT NULL,
    UNIQUE (stream, version)
);
CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END;
CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END;
"""

# Streams whose work is not finished (non-terminal runs), kept in the same
# transaction as the appends that open and finish them, so start-up reads only
# these instead of every stream ever written.
_OPEN_SCHEMA = """
CREATE TABLE IF NOT EXISTS open_streams (stream TEXT PRIMARY KEY);
"""

_COLUMNS = "stream, version, kind, payload, prev_hash, hash"


# Primary SQLite result codes (the extended code's low byte).
_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT = 3, 8, 10, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 14, 26


class ConcurrencyConflict(Exception):
    """Another writer appended to the stream first."""


def _translate(exc: sqlite3.Error, path: Path) -> Exception:
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return JournalIntegrityError(f"{path} is damaged ({exc})")
    if primary == _SQLITE_FULL:
        return StorageFull(f"no space left for {path} ({exc})")
    if primary in (_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CANTOPEN):
        return StorageUnavailable(f"{path} cannot be written ({exc})")
    return exc


class Journal:
    """One SQLite database holding every stream of one worker."""

    _seen: tuple[Any, ...]

    def __init__(self, path: Path, key: bytes) -> None:
        self._set_up(path, key)
        # Create the file owner-only first; SQLite gives its -wal and -shm files
        # the same mode.
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        except OSError as exc:
            raise StorageUnavailable(f"{path} cannot be opened for writing ({exc.strerror})") from None
        with self._sqlite_errors():
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: every acknowledged commit is on disk before the RPC answers, so an
            # OS crash or power loss cannot take back a run or idempotency claim the
            # client was told about. NORMAL would only survive a process kill.
            self._db.execute("PRAGMA synchronous=FULL")
            tables = {name for (name,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            # A journal from before the index learns its open streams from a full scan, once.
            self.open_index_created = "open_streams" not in tables
            self._db.executescript(_SCHEMA + HEADS_SCHEMA + _OPEN_SCHEMA)
            self._check_checkpoint(sealed_before="checkpoint" in tables)
            if "open_seal" not in tables:
                # A journal from before the seal: trust its index once, as found. (A
                # seal row deleted from an existing table reads as a broken seal.)
                with self.transaction():
                    self._seal_open_set(*self._open_set_as_found())
        self._seen = self._fingerprint()

    def _set_up(self, path: Path, key: bytes) -> None:
        """Every attribute but the connection (shared with read-only subclasses)."""
        self._key = key
        self._path = path
        self._watched_files = (str(path), f"{path}-wal")
        self._in_tx = False
        # Work to do once the outermost transaction has committed (see :meth:`after_commit`).
        self._on_commit: list[Callable[[], None]] = []
        # What this process last saw of the files; see :meth:`trust_epoch`.
        self._epoch = 0
        self._seen = ()
        # How many records have had their hash checked; tests use it to show that a
        # mutation's work does not grow with the run's history (W12).
        self.records_verified = 0
        self.open_index_created = False

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def _sqlite_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            translated = _translate(exc, self._path)
            if translated is exc:
                raise
            raise translated from None

    # --- outside changes --------------------------------------------------------------

    def _fingerprint(self) -> tuple[Any, ...]:
        """SQLite's count of other connections' commits, and the files' identity."""
        (data_version,) = self._sql("PRAGMA data_version").fetchone()
        stats: list[tuple[int, int, int, int] | None] = []
        for name in self._watched_files:
            try:
                st = os.stat(name)
            except FileNotFoundError:
                stats.append(None)
            else:
                # The change time too: a writer can put the modification time back
                # (utime), but setting it moves the change time on again.
                stats.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return data_version, *stats

    def trust_epoch(self) -> int:
        """A number that changes whenever something other than this object wrote the files.

        Readers that verified records once may trust them while the epoch stays
        the same; a commit by another connection (say, one that dropped the
        append-only triggers) or any other write to the database or its WAL
        changes it, and then every earlier verification counts for nothing.
        """
        seen = self._fingerprint()
        if seen != self._seen:
            self._seen = seen
            self._epoch += 1
            # Bytes written into the files behind SQLite's back leave its page cache
            # as it was, so the next verified read would check the cached, unaltered
            # pages: drop them, and that read sees what is on disk now.
            self._sql("PRAGMA shrink_memory")
        return self._epoch

    @property
    def in_transaction(self) -> bool:
        """Whether appends may still be rolled back (do not remember what they wrote)."""
        return self._in_tx

    def _sql(self, query: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._sqlite_errors():
            return self._db.execute(query, params)

    # --- the checkpoint -----------------------------------------------------------

    def _check_checkpoint(self, *, sealed_before: bool = False) -> None:
        """Compare the sealed checkpoint with the records actually present.

        A journal written before checkpoints existed is sealed as it is found; one whose
        checkpoint table existed (``sealed_before``) but lost its row was tampered with:
        sealing it as found would hide records removed together with that row.
        """
        count, position = self._db.execute(
            "SELECT COUNT(*), COALESCE(MAX(position), 0) FROM records").fetchone()
        row = self._db.execute("SELECT records, position, seal FROM checkpoint").fetchone()
        if row is None and sealed_before:
            raise JournalIntegrityError(f"{self._path}: the sealed checkpoint was removed")
        if row is None:
            if count:
                log.warning("sealing a journal written before stream heads existed (%d records)",
                            count)
            with self.transaction():
                self._seal_as_found(count, position)
            return
        verify_checkpoint(self._path, self._key, row, (count, position))

    def _seal_as_found(self, count: int, position: int) -> None:
        rows = self._db.execute(
            "SELECT r.stream, r.version, r.hash FROM records r JOIN "
            "(SELECT stream, MAX(version) AS version FROM records GROUP BY stream) m "
            "ON r.stream = m.stream AND r.version = m.version").fetchall()
        for stream, version, digest in rows:
            self._set_head(stream, version, bytes(digest))
        self._db.execute("INSERT INTO checkpoint (id, records, position, seal) VALUES (1, ?, ?, ?)",
                         (count, position, checkpoint_seal(self._key, count, position)))

    def damaged_streams(self) -> list[str]:
        """Streams that do not end at their sealed head (a full scan, for start-up)."""
        with self._sqlite_errors():
            rows = self._db.execute(
                "SELECT m.stream, m.version, r.hash, h.version, h.hash, h.seal FROM "
                "(SELECT stream, MAX(version) AS version FROM records GROUP BY stream) m "
                "JOIN records r ON r.stream = m.stream AND r.version = m.version "
                "LEFT JOIN heads h ON h.stream = m.stream").fetchall()
            orphans = self._db.execute(
                "SELECT stream FROM heads WHERE stream NOT IN (SELECT stream FROM records)"
            ).fetchall()
        damaged = [row[0] for row in orphans]
        for stream, version, digest, head_version, head_digest, seal in rows:
            if (head_version is None
                    or not seal_matches(head_seal(self._key, stream, head_version,
                                                  bytes(head_digest)), seal)
                    or (head_version, bytes(head_digest)) != (version, bytes(digest))):
                damaged.append(stream)
        return damaged

    def damaged_heads(self, after: str = "", limit: int = 256) -> tuple[list[str], str | None]:
        """One batch of the start-up head check, in stream-name order after ``after``.

        Each sealed head must carry a valid seal, name a record with its hash and
        have no record after it. Returns the damaged streams of the batch and the
        name to continue after (``None`` once every head was seen). Index lookups
        only, so a serving worker can run it a batch at a time; a stream whose
        head row itself was removed is caught by its next read instead.
        """
        rows = self._sql(
            "SELECT h.stream, h.version, h.hash, h.seal, r.hash, EXISTS ("
            " SELECT 1 FROM records n WHERE n.stream = h.stream AND n.version = h.version + 1) "
            "FROM heads h LEFT JOIN records r ON r.stream = h.stream AND r.version = h.version "
            "WHERE h.stream > ? ORDER BY h.stream LIMIT ?", (after, limit)).fetchall()
        damaged = [
            stream for stream, version, digest, seal, found, beyond in rows
            if found is None or beyond
            or not seal_matches(head_seal(self._key, stream, version, bytes(digest)), seal)
            or bytes(found) != bytes(digest)
        ]
        return damaged, (rows[-1][0] if len(rows) == limit else None)

    # --- writing --------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All appends inside commit together or not at all."""
        if self._in_tx:
            yield
            return
        self._sql("BEGIN IMMEDIATE")
        self._in_tx = True
        try:
            # The write lock is held now, so no other connection can commit until we
            # do: count any change made before it here, or the fingerprint taken after
            # our COMMIT would silently absorb it.
            self.trust_epoch()
            yield
            self._sql("COMMIT")
            self._seen = self._fingerprint()
        except BaseException:
            self._on_commit.clear()
            # A failed COMMIT (a full disk, say) leaves the transaction open; a failed
            # statement may already have rolled it back.
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise
        finally:
            self._in_tx = False
        callbacks, self._on_commit = self._on_commit, []
        for callback in callbacks:
            # The write is durable now; a reader's bookkeeping failing must not make it
            # look failed (its caller would retry it). What the callback left undone is
            # verified by the next read instead.
            try:
                callback()
            except Exception:
                log.exception("after a commit to %s", self._path)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the current transaction has committed (never if it
        rolls back), so readers only ever remember what is durably in the journal.
        Callbacks keep caches only: one that raises is logged and skipped."""
        assert self._in_tx, "after_commit outside a transaction"
        self._on_commit.append(callback)

    def _set_head(self, stream: str, version: int, digest: bytes) -> None:
        self._db.execute(
            "INSERT INTO heads (stream, version, hash, seal) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (stream) DO UPDATE SET version = excluded.version, "
            "hash = excluded.hash, seal = excluded.seal",
            (stream, version, digest, head_seal(self._key, stream, version, digest)),
        )

    def append(
        self, stream: str, version: int, kind: str, payload: dict[str, Any], prev: Record | None
    ) -> Record:
        """Append record ``version`` after ``prev`` (``None`` for the first record)."""
        expected = 1 if prev is None else prev.version + 1
        if version != expected:
            raise ConcurrencyConflict(stream)
        prev_hash = GENESIS if prev is None else prev.hash
        text = canonical_json(payload)
        digest = record_hash(self._key, prev_hash, stream, version, kind, text)
        try:
            with self.transaction(), self._sqlite_errors():
                position = self._db.execute(
                    f"INSERT INTO records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                    (stream, version, kind, text, prev_hash, digest),
                ).lastrowid
                self._set_head(stream, version, digest)
                (records,) = self._db.execute("SELECT records FROM checkpoint").fetchone()
                self._db.execute(
                    "UPDATE checkpoint SET records = ?, position = ?, seal = ?",
                    (records + 1, position, checkpoint_seal(self._key, records + 1, position or 0)),
                )
        except sqlite3.IntegrityError:
            raise ConcurrencyConflict(stream) from None
        return Record(stream, version, kind, text, prev_hash, digest)

    # --- reading --------------------------------------------------------------

    def _check(self, row: tuple[Any, ...]) -> Record:
        self.records_verified += 1
        stream, version, kind, text, prev_hash, digest = row
        want = record_hash(self._key, bytes(prev_hash), stream, version, kind, text)
        if not hmac.compare_digest(want, bytes(digest)):
            raise JournalIntegrityError(f"record hash mismatch in {stream}@{version}")
        return Record(stream, version, kind, text, bytes(prev_hash), bytes(digest))

    def sealed_head(self, stream: str) -> tuple[int, bytes] | None:
        """The sealed head of ``stream``: its newest version and hash (seal checked)."""
        return self._head(stream)

    def _head(self, stream: str) -> tuple[int, bytes] | None:
        """The sealed head of ``stream``: its newest version and hash."""
        row = self._sql("SELECT version, hash, seal FROM heads WHERE stream = ?",
                        (stream,)).fetchone()
        if row is None:
            return None
        version, digest, seal = row[0], bytes(row[1]), row[2]
        if not seal_matches(head_seal(self._key, stream, version, digest), seal):
            raise JournalIntegrityError(f"the head of {stream} was altered")
        return version, digest

    def _check_ends_at_head(self, stream: str, last: Record | None) -> None:
        head = self._head(stream)
        if last is None:
            if head is not None:
                raise JournalIntegrityError(f"{stream} lost its records")
        elif head != (last.version, last.hash):
            raise JournalIntegrityError(f"{stream} does not end at its sealed head")

    def record(self, stream: str, version: int) -> Record | None:
        """One record, its own hash checked (and the genesis link for version 1)."""
        row = self._sql(
            f"SELECT {_COLUMNS} FROM records WHERE stream = ? AND version = ?", (stream, version)
        ).fetchone()
        if row is None:
            head = self._head(stream)
            if head is not None and head[0] >= version:
                raise JournalIntegrityError(f"{stream}@{version} is missing")
            return None
        rec = self._check(row)
        if version == 1 and rec.prev_hash != GENESIS:
            raise JournalIntegrityError(f"broken genesis link in {stream}")
        return rec

    def tail(self, stream: str, count: int = 2) -> list[Record]:
        """The last ``count`` records, oldest first, hashes and links checked."""
        rows = self._sql(
            f"SELECT {_COLUMNS} FROM records WHERE stream = ? ORDER BY version DESC LIMIT ?",
            (stream, count),
        ).fetchall()
        records = [self._check(r) for r in reversed(rows)]
        _check_links(records)
        self._check_ends_at_head(stream, records[-1] if records else None)
        if records and records[0].version == 1 and records[0].prev_hash != GENESIS:
            raise JournalIntegrityError(f"broken genesis link in {stream}")
        return records

    def head(self, stream: str) -> Record | None:
        records = self.tail(stream, 1)
        return records[0] if records else None

    def range(self, stream: str, first: int, last: int) -> list[Record]:
        """Records ``first..last`` inclusive, hashes and links among them checked."""
        rows = self._sql(
            f"SELECT {_COLUMNS} FROM records WHERE stream = ? AND version BETWEEN ? AND ? "
            "ORDER BY version",
            (stream, first, last),
        ).fetchall()
        records = [self._check(r) for r in rows]
        _check_links(records)
        if len(records) != max(0, last - first + 1):
            head = self._head(stream)
            present = 0 if head is None else max(0, min(last, head[0]) - first + 1)
            if len(records) != present:
                raise JournalIntegrityError(f"{stream} is missing records in {first}..{last}")
        return records

    def read_stream(
        self, stream: str, batch: int = 512, start_after: Record | None = None
    ) -> Iterator[Record]:
        """Every record from the first (or after ``start_after``), fully chain-verified."""
        prev = start_after
        version = 0 if prev is None else prev.version
        while True:
            rows = self._sql(
                f"SELECT {_COLUMNS} FROM records WHERE stream = ? AND version > ? "
                "ORDER BY version LIMIT ?",
                (stream, version, batch),
            ).fetchall()
            if not rows:
                self._check_ends_at_head(stream, prev)
                return
            for row in rows:
                rec = self._check(row)
                expected_prev = GENESIS if prev is None else prev.hash
                if rec.version != version + 1 or rec.prev_hash != expected_prev:
                    raise JournalIntegrityError(f"broken chain in {stream}@{rec.version}")
                yield rec
                prev, version = rec, rec.version

    def mark_open(self, stream: str, is_open: bool) -> None:
        """Add ``stream`` to, or drop it from, the index of open streams (inside the
        transaction of the append that opens or finishes it), updating its seal."""
        assert self._in_tx, "mark_open outside a transaction"
        if is_open:
            changed = self._sql("INSERT OR IGNORE INTO open_streams (stream) VALUES (?)",
                                (stream,)).rowcount
        else:
            changed = self._sql("DELETE FROM open_streams WHERE stream = ?", (stream,)).rowcount
        if changed:
            # A seal row removed behind our back counts as empty: the sum stays wrong,
            # so the next start-up still finds the index altered and rebuilds it.
            count, digest = self._sql("SELECT count, digest FROM open_seal").fetchone() or (
                0, bytes(32))
            self._seal_open_set(count + (1 if is_open else -1),
                                xor_bytes(bytes(digest), open_member(self._key, stream)))

    def _seal_open_set(self, count: int, digest: bytes) -> None:
        self._sql("INSERT INTO open_seal (id, count, digest, seal) VALUES (1, ?, ?, ?) "
                  "ON CONFLICT (id) DO UPDATE SET count = excluded.count, "
                  "digest = excluded.digest, seal = excluded.seal",
                  (count, digest, open_set_seal(self._key, count, digest)))

    def _open_set_as_found(self) -> tuple[int, bytes]:
        digest, count = bytes(32), 0
        for (stream,) in self._sql("SELECT stream FROM open_streams").fetchall():
            digest, count = xor_bytes(digest, open_member(self._key, stream)), count + 1
        return count, digest

    def open_index_intact(self) -> bool:
        """Whether the index of open streams is exactly what this worker's appends left.

        Recovery after a crash visits only the streams in that index, so a row removed
        or added by hand would leave a run unsettled, or settle one twice.
        """
        row = self._sql("SELECT count, digest, seal FROM open_seal").fetchone()
        if row is None:
            return False
        count, digest, seal = row
        return (seal_matches(open_set_seal(self._key, count, bytes(digest)), seal)
                and (count, bytes(digest)) == self._open_set_as_found())

    def reset_open_index(self) -> None:
        """Empty the index of open streams (before rebuilding it from the records)."""
        with self.transaction():
            self._sql("DELETE FROM open_streams")
            self._seal_open_set(0, bytes(32))

    def open_streams(self, prefix: str) -> list[str]:
        """Streams marked open whose names start with ``prefix``, oldest first."""
        rows = self._sql(
            "SELECT o.stream FROM open_streams o JOIN records r "
            "ON r.stream = o.stream AND r.version = 1 "
            "WHERE o.stream >= ? AND o.stream < ? ORDER BY r.position",
            (prefix, _after_prefix(prefix)),
        ).fetchall()
        return [r[0] for r in rows]

    def streams_with_prefix(self, prefix: str, kind: str) -> list[str]:
        """Names of streams whose first record has ``kind`` (start-up scans only)."""
        # A name range, not LIKE, so SQLite walks the (stream, version) index instead
        # of every record.
        rows = self._sql(
            "SELECT stream FROM records WHERE stream >= ? AND stream < ? AND version = 1 "
            "AND kind = ? ORDER BY position",
            (prefix, _after_prefix(prefix), kind),
        ).fetchall()
        return [r[0] for r in rows]


def _after_prefix(prefix: str) -> str:
    """The smallest name greater than every name starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _check_links(records: list[Record]) -> None:
    for before, after in itertools.pairwise(records):
        if after.version != before.version + 1 or after.prev_hash != before.hash:
            raise JournalIntegrityError(f"broken chain in {after.stream}@{after.version}")
