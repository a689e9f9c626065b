"""Journal records and how their chain hashes are computed.

The journal is a set of streams (one per run, per owner index, per
credential, per idempotency claim and per plan). Each record names its stream
and version (1, 2, ...) and carries the HMAC-SHA256 of its predecessor's hash
and its own content under a key kept in the state folder. A record whose
stored hash does not match, or whose predecessor link is broken, fails
verification.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from dataclasses import dataclass
from typing import Any

GENESIS = bytes(32)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_hash(key: bytes, prev: bytes, stream: str, version: int, kind: str, payload: str) -> bytes:
    stream_b, kind_b = stream.encode(), kind.encode()
    message = b"".join((
        prev,
        struct.pack(">I", len(stream_b)), stream_b,
        struct.pack(">I", len(kind_b)), kind_b,
        struct.pack(">Q", version),
        payload.encode(),
    ))
    return hmac.new(key, message, hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class Record:
    """One verified journal record."""

    stream: str
    version: int
    kind: str
    payload_text: str
    prev_hash: bytes
    hash: bytes

    @property
    def payload(self) -> dict[str, Any]:
        value = json.loads(self.payload_text)
        assert isinstance(value, dict)
        return value
