"""The sidecar bootstrap messages and their framing (W16).

Each message is a 4-byte big-endian length followed by that many bytes of
UTF-8 JSON holding one object, at most :data:`MAX_MESSAGE_BYTES`. The parent
sends one :class:`BootstrapRequest` on the worker's input descriptor; the
worker answers with one reply (success or error) on its output descriptor.
See ``api/README.md`` and ``conformance/docs/sidecar.md``.

Reading is bounded in size and time, and every member is checked: unknown
members, unknown versions and anything outside its grammar are refused.
"""

from __future__ import annotations

import json
import os
import re
import select
import stat
import struct
import time
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 1
# Version 2 adds the required ``execution_boundary`` member, reported back in the reply.
BOUNDARY_VERSION = 2
PROTOCOL_VERSIONS = (PROTOCOL_VERSION, BOUNDARY_VERSION)
# The managed execution boundaries (an axis of their own, never inferred from the grant).
# Version 1 requests predate the member and mean the default host posture, full_access.
BOUNDARIES = ("full_access", "workspace_isolated", "offline_isolated")
# The generic model-visible network tools offline_isolated hides from the run's tool set.
OFFLINE_HIDDEN_TOOLS = frozenset({"network.http", "web.fetch", "docs.fetch"})
MAX_MESSAGE_BYTES = 65_536
# How long the parent has to send its request once the worker has started.
READ_TIMEOUT_SECONDS = 30.0

SCOPES = frozenset({
    "runs:execute", "runs:read", "runs:control", "prompts:respond",
    "approvals:respond", "artifacts:read", "artifacts:write",
})
_APP_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Roles and tools are identifiers chosen by the deployment; keep them printable and short.
_NAME = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_MAX_LIST = 64


class BootstrapError(Exception):
    """The bootstrap failed; ``code`` is the token sent back to the parent."""

    def __init__(self, code: str, message: str, version: int = PROTOCOL_VERSION) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # The version the reply speaks: the request's, once it is known.
        self.version = version


@dataclass(frozen=True, slots=True)
class Grant:
    """What the sidecar's one credential may do."""

    scopes: tuple[str, ...]
    roles: tuple[str, ...]
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BootstrapRequest:
    """The parent's validated request."""

    state_dir: str
    application_id: str
    grant: Grant
    version: int = PROTOCOL_VERSION
    execution_boundary: str = "full_access"

    def effective_tools(self) -> tuple[str, ...]:
        """The granted tools the boundary lets a run see."""
        if self.execution_boundary == "offline_isolated":
            return tuple(t for t in self.grant.tools if t not in OFFLINE_HIDDEN_TOOLS)
        return self.grant.tools


# -- framing ------------------------------------------------------------------


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise BootstrapError("bootstrap_timeout", "no complete bootstrap message in time")
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            continue
        chunk = os.read(fd, min(remaining, 65_536))
        if not chunk:
            raise BootstrapError("bootstrap_truncated", "bootstrap input ended early")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, timeout: float = READ_TIMEOUT_SECONDS) -> bytes:
    """Read one framed message; refuses lengths over the cap before reading them."""
    deadline = time.monotonic() + timeout
    (length,) = struct.unpack(">I", _read_exact(fd, 4, deadline))
    if length > MAX_MESSAGE_BYTES:
        raise BootstrapError("bootstrap_too_large",
                             f"bootstrap message exceeds {MAX_MESSAGE_BYTES} bytes")
    return _read_exact(fd, length, deadline)


def encode_frame(payload: dict[str, Any]) -> bytes:
    """Frame one JSON object."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(body) > MAX_MESSAGE_BYTES:
        raise ValueError("message too large to frame")
    return struct.pack(">I", len(body)) + body


def write_frame(fd: int, payload: dict[str, Any]) -> None:
    """Write one framed message completely."""
    view = memoryview(encode_frame(payload))
    while view:
        written = os.write(fd, view)
        view = view[written:]


# -- validation -------------------------------------------------------------------


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BootstrapError("bootstrap_invalid", f"member {key!r} appears twice")
        out[key] = value
    return out


def _exact_members(obj: Any, where: str, members: set[str]) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise BootstrapError("bootstrap_invalid", f"{where} must be a JSON object")
    if unknown := set(obj) - members:
        raise BootstrapError("bootstrap_invalid",
                             f"{where} has unknown member(s): {', '.join(sorted(unknown))}")
    if missing := members - set(obj):
        raise BootstrapError("bootstrap_invalid",
                             f"{where} lacks member(s): {', '.join(sorted(missing))}")
    return obj


def _names(value: Any, where: str, pattern: re.Pattern[str],
           allowed: frozenset[str] | None = None) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > _MAX_LIST:
        raise BootstrapError("grant_invalid", f"{where} must be a list of at most {_MAX_LIST}")
    seen: list[str] = []
    for item in value:
        if not isinstance(item, str) or not pattern.fullmatch(item):
            raise BootstrapError("grant_invalid", f"{where} holds a malformed entry")
        if allowed is not None and item not in allowed:
            raise BootstrapError("grant_invalid", f"{where} holds an unknown value {item!r}")
        if item in seen:
            raise BootstrapError("grant_invalid", f"{where} repeats {item!r}")
        seen.append(item)
    return tuple(seen)


def check_state_dir(path: Any) -> str:
    """An absolute, existing, real directory owned by this user with mode 0700."""
    if not isinstance(path, str) or not path or "\x00" in path or len(path) > 4096:
        raise BootstrapError("state_dir_invalid", "state_dir must be a path string")
    if not os.path.isabs(path):
        raise BootstrapError("state_dir_invalid", "state_dir must be absolute")
    try:
        st = os.lstat(path)
    except OSError:
        raise BootstrapError("state_dir_invalid", "state_dir does not exist") from None
    if not stat.S_ISDIR(st.st_mode):
        raise BootstrapError("state_dir_invalid", "state_dir is not a directory")
    if st.st_uid != os.getuid():
        raise BootstrapError("state_dir_invalid", "state_dir is not owned by this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        raise BootstrapError("state_dir_invalid", "state_dir must have mode 0700")
    return path


def parse_request(raw: bytes) -> BootstrapRequest:
    """Decode and validate the parent's message."""
    try:
        text = raw.decode("utf-8")
        obj = json.loads(text, object_pairs_hook=_reject_duplicates,
                         parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, BootstrapError):
            raise
        raise BootstrapError("bootstrap_invalid", "bootstrap message is not JSON") from None
    if not isinstance(obj, dict):
        raise BootstrapError("bootstrap_invalid", "bootstrap message must be a JSON object")
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise BootstrapError("bootstrap_invalid", "version must be an integer")
    if version not in PROTOCOL_VERSIONS:
        raise BootstrapError("version_unsupported",
                             f"bootstrap version {version} is not supported")
    try:
        return _parse_members(obj, version)
    except BootstrapError as exc:
        exc.version = version
        raise


def _parse_members(obj: dict[str, Any], version: int) -> BootstrapRequest:
    members = {"version", "state_dir", "application_id", "grant"}
    if version == BOUNDARY_VERSION:
        members.add("execution_boundary")
    obj = _exact_members(obj, "bootstrap", members)
    boundary = obj.get("execution_boundary", "full_access")
    if boundary not in BOUNDARIES:
        raise BootstrapError("bootstrap_invalid", "execution_boundary is not a known boundary")
    if boundary == "workspace_isolated":
        # This worker has no platform-native workspace sandbox: refuse rather than run wider.
        raise BootstrapError("boundary_unsupported",
                             "this worker cannot provide the workspace_isolated boundary")
    app = obj["application_id"]
    if not isinstance(app, str) or not _APP_ID.fullmatch(app):
        raise BootstrapError("bootstrap_invalid", "application_id is malformed")
    grant = _exact_members(obj["grant"], "grant", {"scopes", "roles", "tools"})
    scopes = _names(grant["scopes"], "grant.scopes", re.compile(r"[a-z:]{1,32}"), SCOPES)
    return BootstrapRequest(
        state_dir=check_state_dir(obj["state_dir"]),
        application_id=app,
        grant=Grant(
            scopes=scopes,
            roles=_names(grant["roles"], "grant.roles", _NAME),
            tools=_names(grant["tools"], "grant.tools", _NAME),
        ),
        version=version,
        execution_boundary=boundary,
    )


def _refuse_constant(name: str) -> Any:
    raise BootstrapError("bootstrap_invalid", f"{name} is not JSON")


def error_reply(code: str, message: str, version: int = PROTOCOL_VERSION) -> dict[str, Any]:
    """The failure reply; ``message`` must never hold secrets."""
    return {"version": version, "error": {"code": code, "message": message}}
