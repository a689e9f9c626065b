"""ListRuns continuation tokens (W9).

A token binds the application, the canonical status filter, the owner-index
snapshot head (version and hash) and the exclusive resume version, and is
authenticated with HMAC-SHA256 under a key in the state folder. Anything
altered, foreign, expired or issued for another filter is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass

from grpclib.const import Status

from ..errors import ApiError

_VERSION = 1
_TTL_SECONDS = 24 * 3600
# Unpadded base64url, the only spelling ``issue`` writes.
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Cursor:
    head_version: int
    head_hash: str
    resume_below: int  # next index version to read is resume_below - 1


def _invalid() -> ApiError:
    return ApiError(
        Status.INVALID_ARGUMENT,
        "PAGE_TOKEN_INVALID",
        "the page token is not valid for this request",
        {"field": "page_token"},
    )


class TokenCodec:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()

    def issue(self, application_id: str, statuses: list[str], cursor: Cursor) -> str:
        body = json.dumps(
            {
                "v": _VERSION,
                "app": application_id,
                "f": statuses,
                "hv": cursor.head_version,
                "hh": cursor.head_hash,
                "r": cursor.resume_below,
                "exp": int(time.time()) + _TTL_SECONDS,
            },
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
        return base64.urlsafe_b64encode(body + self._mac(body)).decode().rstrip("=")

    def open(self, token: str, application_id: str, statuses: list[str]) -> Cursor:
        if len(token) > 1024 or not _TOKEN_CHARS.fullmatch(token):
            raise _invalid()
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except ValueError:
            raise _invalid() from None
        # The decoder skips stray characters and ignores the spare low bits of the
        # last one, so several spellings decode alike: accept only the one issued.
        if base64.urlsafe_b64encode(raw).decode().rstrip("=") != token:
            raise _invalid()
        body, mac = raw[:-32], raw[-32:]
        if len(raw) <= 32 or not hmac.compare_digest(mac, self._mac(body)):
            raise _invalid()
        data = json.loads(body)
        if (
            data.get("v") != _VERSION
            or data.get("app") != application_id
            or data.get("f") != statuses
            or data.get("exp", 0) < time.time()
        ):
            raise _invalid()
        return Cursor(int(data["hv"]), str(data["hh"]), int(data["r"]))
