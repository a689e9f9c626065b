"""SQLite storage of journal streams.

Only ``INSERT`` ever touches the ``records`` table: triggers refuse updates
and deletes, and ``UNIQUE(stream, version)`` turns a concurrent append to the
same stream position into :class:`ConcurrencyConflict` (optimistic
concurrency). Reads come in two strengths:

* :meth:`Journal.tail` / :meth:`Journal.record` check the hashes of the few
  records they return and the links between them (the cheap mutation path);
* :meth:`Journal.read_stream` walks a stream from its first record and checks
  every hash and every link (a full, verified read).

Any mismatch raises :class:`~colossus_reference_worker.errors.JournalIntegrityError`.
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import JournalIntegrityError
from .records import GENESIS, Record, canonical_json, record_hash

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

_COLUMNS = "stream, version, kind, payload, prev_hash, hash"


class ConcurrencyConflict(Exception):
    """Another writer appended to the stream first."""


class Journal:
    """One SQLite database holding every stream of one worker."""

    def __init__(self, path: Path, key: bytes) -> None:
        self._key = key
        # Create the file owner-only first; SQLite gives its -wal and -shm files
        # the same mode.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: every acknowledged commit is on disk before the RPC answers, so an
        # OS crash or power loss cannot take back a run or idempotency claim the
        # client was told about. NORMAL would only survive a process kill.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._in_tx = False
        # How many records have had their hash checked; tests use it to show that a
        # mutation's work does not grow with the run's history (W12).
        self.records_verified = 0

    def close(self) -> None:
        self._db.close()

    # --- writing --------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All appends inside commit together or not at all."""
        if self._in_tx:
            yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")
        finally:
            self._in_tx = False

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
            with self.transaction():
                self._db.execute(
                    f"INSERT INTO records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                    (stream, version, kind, text, prev_hash, digest),
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

    def record(self, stream: str, version: int) -> Record | None:
        """One record, its own hash checked (and the genesis link for version 1)."""
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM records WHERE stream = ? AND version = ?", (stream, version)
        ).fetchone()
        if row is None:
            return None
        rec = self._check(row)
        if version == 1 and rec.prev_hash != GENESIS:
            raise JournalIntegrityError(f"broken genesis link in {stream}")
        return rec

    def tail(self, stream: str, count: int = 2) -> list[Record]:
        """The last ``count`` records, oldest first, hashes and links checked."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM records WHERE stream = ? ORDER BY version DESC LIMIT ?",
            (stream, count),
        ).fetchall()
        records = [self._check(r) for r in reversed(rows)]
        _check_links(records)
        if records and records[0].version == 1 and records[0].prev_hash != GENESIS:
            raise JournalIntegrityError(f"broken genesis link in {stream}")
        return records

    def head(self, stream: str) -> Record | None:
        records = self.tail(stream, 1)
        return records[0] if records else None

    def range(self, stream: str, first: int, last: int) -> list[Record]:
        """Records ``first..last`` inclusive, hashes and links among them checked."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM records WHERE stream = ? AND version BETWEEN ? AND ? "
            "ORDER BY version",
            (stream, first, last),
        ).fetchall()
        records = [self._check(r) for r in rows]
        _check_links(records)
        return records

    def read_stream(
        self, stream: str, batch: int = 512, start_after: Record | None = None
    ) -> Iterator[Record]:
        """Every record from the first (or after ``start_after``), fully chain-verified."""
        prev = start_after
        version = 0 if prev is None else prev.version
        while True:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM records WHERE stream = ? AND version > ? "
                "ORDER BY version LIMIT ?",
                (stream, version, batch),
            ).fetchall()
            if not rows:
                return
            for row in rows:
                rec = self._check(row)
                expected_prev = GENESIS if prev is None else prev.hash
                if rec.version != version + 1 or rec.prev_hash != expected_prev:
                    raise JournalIntegrityError(f"broken chain in {stream}@{rec.version}")
                yield rec
                prev, version = rec, rec.version

    def streams_with_prefix(self, prefix: str, kind: str) -> list[str]:
        """Names of streams whose first record has ``kind`` (start-up scans only)."""
        rows = self._db.execute(
            "SELECT stream FROM records WHERE version = 1 AND kind = ? AND stream LIKE ? "
            "ORDER BY position",
            (kind, prefix.replace("%", "") + "%"),
        ).fetchall()
        return [r[0] for r in rows]


def _check_links(records: list[Record]) -> None:
    for before, after in itertools.pairwise(records):
        if after.version != before.version + 1 or after.prev_hash != before.hash:
            raise JournalIntegrityError(f"broken chain in {after.stream}@{after.version}")
