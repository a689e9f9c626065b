"""Sealed stream heads and the journal checkpoint: what makes truncation visible.

Each stream is hash-chained on its own, so dropping its newest records leaves a
shorter chain that still verifies. Two sealed summaries, written in the same
transaction as every append, close that gap:

* ``heads``: per stream, the version and hash of its newest record. A read that
  ends anywhere else, or a stream that lost every record, fails verification.
* ``checkpoint``: one row with the number of records and the highest position.
  It catches records dropped together with their stream's head row.
* ``open_seal``: the size of the index of unfinished streams and the XOR of a keyed
  hash of each member, kept up to date as members come and go, so start-up can
  tell whether that index (which decides which runs recovery visits) was edited.

Both are sealed with HMAC-SHA256 under the journal key, with their own domain
labels, so they cannot be rewritten without that key.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from pathlib import Path

from ..errors import JournalIntegrityError

HEADS_SCHEMA = """
CREATE TABLE IF NOT EXISTS heads (
    stream  TEXT    PRIMARY KEY,
    version INTEGER NOT NULL,
    hash    BLOB    NOT NULL,
    seal    BLOB    NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoint (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    records  INTEGER NOT NULL,
    position INTEGER NOT NULL,
    seal     BLOB    NOT NULL
);
CREATE TABLE IF NOT EXISTS open_seal (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    count  INTEGER NOT NULL,
    digest BLOB    NOT NULL,
    seal   BLOB    NOT NULL
);
"""


def head_seal(key: bytes, stream: str, version: int, digest: bytes) -> bytes:
    name = stream.encode()
    message = b"".join((b"colossus.journal.head\0", struct.pack(">I", len(name)), name,
                        struct.pack(">Q", version), digest))
    return hmac.new(key, message, hashlib.sha256).digest()


def checkpoint_seal(key: bytes, records: int, position: int) -> bytes:
    message = b"colossus.journal.checkpoint\0" + struct.pack(">QQ", records, position)
    return hmac.new(key, message, hashlib.sha256).digest()


def open_member(key: bytes, stream: str) -> bytes:
    """A stream's share of the open-set digest (the digest XORs the shares of every member)."""
    return hmac.new(key, b"colossus.journal.open\0" + stream.encode(), hashlib.sha256).digest()


def open_set_seal(key: bytes, count: int, digest: bytes) -> bytes:
    message = b"colossus.journal.open-set\0" + struct.pack(">Q", count) + digest
    return hmac.new(key, message, hashlib.sha256).digest()


def xor_bytes(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def seal_matches(expected: bytes, stored: bytes) -> bool:
    return hmac.compare_digest(expected, bytes(stored))


def verify_checkpoint(
    path: Path, key: bytes, sealed: tuple[int, int, bytes], found: tuple[int, int]
) -> None:
    """Fails unless the sealed checkpoint is genuine and names exactly the records found.

    ``sealed`` is the checkpoint row (records, last position, seal); ``found`` is what
    the records table holds now (count, highest position).
    """
    records, last, seal = sealed
    count, position = found
    if not seal_matches(checkpoint_seal(key, records, last), seal):
        raise JournalIntegrityError(f"{path}: the journal checkpoint was altered")
    if (records, last) != (count, position):
        raise JournalIntegrityError(
            f"{path}: the checkpoint names {records} records up to position {last}, "
            f"the file holds {count} up to {position}; records were removed")
