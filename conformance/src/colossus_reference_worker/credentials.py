"""Application credentials (W3, W4): issue, activate, revoke and verify bearers.

The worker never stores a bearer. It keeps a keyed verifier, the
HMAC-SHA256 of the bearer under a key in the state folder, together with the
application's exact grant. A credential's life is a journal stream:
``issued`` (pending, cannot authenticate) -> ``activated`` -> ``revoked``
(final). Verification looks the verifier up and compares it in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from grpclib.const import Status

from .config import SCOPES
from .errors import ApiError, JournalIntegrityError
from .journal import Journal

BEARER_PREFIX = "cb1_"
_BEARER_GRAMMAR = re.compile(r"[\x21-\x7e]{32,256}")
APP_ID_GRAMMAR = re.compile(r"[A-Za-z0-9_-]{1,64}")
NAME_GRAMMAR = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def new_bearer() -> str:
    """``cb1_`` and 43 base64url characters: 256 random bits."""
    raw = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    return BEARER_PREFIX + raw


def new_id(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(15).replace("-", "x").replace("_", "y")


@dataclass(frozen=True)
class Grant:
    """What an application may do: exact scopes, logical roles and tools."""

    scopes: tuple[str, ...]
    roles: tuple[str, ...]
    tools: tuple[str, ...]

    def __post_init__(self) -> None:
        unknown = [s for s in self.scopes if s not in SCOPES]
        if unknown:
            raise ValueError(f"unknown scope {unknown[0]!r}")
        for name in (*self.roles, *self.tools):
            if not NAME_GRAMMAR.fullmatch(name):
                raise ValueError(f"invalid role or tool name {name!r}")

    def to_json(self) -> dict[str, Any]:
        return {"scopes": list(self.scopes), "roles": list(self.roles), "tools": list(self.tools)}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Grant:
        return cls(tuple(value["scopes"]), tuple(value["roles"]), tuple(value["tools"]))


@dataclass
class Credential:
    """The non-secret view of one credential."""

    credential_id: str
    application_id: str
    grant: Grant
    verifier: str
    state: str = "pending"  # pending | active | revoked
    history: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Principal:
    """Who is calling: the authenticated application and its grant."""

    application_id: str
    credential_id: str
    grant: Grant


class CredentialBook:
    """All credentials of one worker, mirrored in memory from the journal."""

    def __init__(self, journal: Journal, verifier_key: bytes) -> None:
        self._journal = journal
        self._key = verifier_key
        self._by_id: dict[str, Credential] = {}
        self._by_verifier: dict[str, Credential] = {}
        for stream in journal.streams_with_prefix("cred:", "credential.issued"):
            self._load(stream)

    def _verifier(self, bearer: str) -> str:
        return hmac.new(self._key, bearer.encode(), hashlib.sha256).hexdigest()

    def _load(self, stream: str) -> None:
        cred: Credential | None = None
        for rec in self._journal.read_stream(stream):
            data = rec.payload
            if rec.kind == "credential.issued":
                cred = Credential(
                    credential_id=stream.removeprefix("cred:"),
                    application_id=data["application_id"],
                    grant=Grant.from_json(data["grant"]),
                    verifier=data["verifier"],
                )
            elif cred is None:
                raise JournalIntegrityError("credential stream without issue record")
            elif rec.kind == "credential.activated" and cred.state == "pending":
                cred.state = "active"
            elif rec.kind == "credential.revoked":
                cred.state = "revoked"
            if cred is not None:
                cred.history.append(rec.kind)
        if cred is not None:
            self._by_id[cred.credential_id] = cred
            self._by_verifier[cred.verifier] = cred

    # --- administration ---------------------------------------------------------

    def issue(self, application_id: str, grant: Grant) -> tuple[Credential, str]:
        """Persist a pending credential and return it with its one-time bearer."""
        if not APP_ID_GRAMMAR.fullmatch(application_id):
            raise ValueError("application ID must be 1-64 characters of [A-Za-z0-9_-]")
        bearer = new_bearer()
        cred = Credential(new_id("cred_"), application_id, grant, self._verifier(bearer))
        stream = f"cred:{cred.credential_id}"
        self._journal.append(
            stream,
            1,
            "credential.issued",
            {
                "application_id": application_id,
                "grant": grant.to_json(),
                "verifier": cred.verifier,
                "time": time.time_ns() // 1000,
            },
            None,
        )
        cred.history.append("credential.issued")
        self._by_id[cred.credential_id] = cred
        self._by_verifier[cred.verifier] = cred
        return cred, bearer

    def _transition(self, credential_id: str, kind: str) -> Credential:
        cred = self._by_id.get(credential_id)
        if cred is None:
            raise KeyError(credential_id)
        stream = f"cred:{credential_id}"
        head = self._journal.head(stream)
        assert head is not None
        self._journal.append(
            stream, head.version + 1, kind, {"time": time.time_ns() // 1000}, head
        )
        cred.history.append(kind)
        return cred

    def activate(self, credential_id: str) -> Credential:
        cred = self._by_id.get(credential_id)
        if cred is None:
            raise KeyError(credential_id)
        if cred.state != "pending":
            raise ValueError(f"credential is {cred.state}, not pending")
        self._transition(credential_id, "credential.activated")
        cred.state = "active"
        return cred

    def revoke(self, credential_id: str) -> Credential:
        cred = self._by_id.get(credential_id)
        if cred is None:
            raise KeyError(credential_id)
        if cred.state != "revoked":
            self._transition(credential_id, "credential.revoked")
            cred.state = "revoked"
        return cred

    def get(self, credential_id: str) -> Credential | None:
        return self._by_id.get(credential_id)

    def all(self) -> list[Credential]:
        return list(self._by_id.values())

    # --- authentication ---------------------------------------------------------

    def authenticate(self, authorization: str | None,
                     known: KnownCredentials | None = None) -> Principal:
        """The caller behind one ``authorization`` value, checked on every call.

        ``known`` (one per connection) remembers which credential a value
        already proved to be, which skips the grammar check and the keyed hash
        on later calls of that connection. The credential's state is read live
        every time, so a revocation refuses the very next call.
        """
        if authorization is None:
            raise ApiError(
                Status.UNAUTHENTICATED, "CREDENTIAL_MISSING", "a bearer credential is required"
            )
        cred = known.get(authorization) if known is not None else None
        if cred is None or self._by_verifier.get(cred.verifier) is not cred:
            cred = self._verify(authorization)
            if known is not None:
                known.remember(authorization, cred)
        if cred.state == "pending":
            raise ApiError(
                Status.UNAUTHENTICATED, "CREDENTIAL_NOT_ACTIVE", "the credential is not active"
            )
        if cred.state == "revoked":
            raise ApiError(
                Status.UNAUTHENTICATED, "CREDENTIAL_REVOKED", "the credential was revoked"
            )
        return Principal(cred.application_id, cred.credential_id, cred.grant)


    def _verify(self, authorization: str) -> Credential:
        # RFC 7235: the scheme name is case-insensitive; RFC 6750 allows one or more
        # spaces after it. The bearer itself must be exact.
        scheme, _, bearer = authorization.partition(" ")
        bearer = bearer.lstrip(" ")
        if scheme.lower() != "bearer" or not _BEARER_GRAMMAR.fullmatch(bearer):
            raise _invalid()
        verifier = self._verifier(bearer)
        cred = self._by_verifier.get(verifier)
        if cred is None or not hmac.compare_digest(cred.verifier, verifier):
            raise _invalid()
        return cred


class KnownCredentials:
    """Per connection: which credential each ``authorization`` value already proved to be.

    Only values that passed the full check are kept, at most a few per
    connection, and they die with it. The header value is held no longer than
    the connection's own HPACK table may hold it, and never shown by ``repr``.
    """

    __slots__ = ("_by_value",)
    LIMIT = 4

    def __init__(self) -> None:
        self._by_value: dict[str, Credential] = {}

    def get(self, authorization: str) -> Credential | None:
        return self._by_value.get(authorization)

    def remember(self, authorization: str, cred: Credential) -> None:
        if len(self._by_value) >= self.LIMIT:
            self._by_value.clear()
        self._by_value[authorization] = cred

    def __len__(self) -> int:
        return len(self._by_value)

    def __repr__(self) -> str:
        return f"<KnownCredentials: {len(self._by_value)} values>"


def _invalid() -> ApiError:
    return ApiError(Status.UNAUTHENTICATED, "CREDENTIAL_INVALID", "the credential is not valid")
