"""The sidecar bootstrap protocol (W16): one length-prefixed JSON frame each way over pipes.

Each frame is a 4-byte big-endian length, then that many bytes of one UTF-8 JSON object
(``conformance/docs/sidecar.md``). The reply is validated member by member with the same
rules as a daemon's discovery files before anything in it is used; the bearer goes
straight into an opaque :class:`Bearer`.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._errors import (
    CertificateError,
    CredentialError,
    DescriptorError,
    PinMismatchError,
    SidecarError,
)
from ._options import SidecarOptions
from ._reasons import LocalReason
from ._transport._bearer import Bearer
from ._transport._certificate import LeafCertificate, parse_leaf_certificate
from ._transport._descriptor import (
    API_VERSION,
    MAX_CERTIFICATE_BYTES,
    Endpoint,
    is_opaque_id,
    is_pin,
    parse_endpoint,
)
from ._transport._strict_json import load_json_object

MAX_FRAME: Final = 65_536
BOOTSTRAP_VERSION: Final = 1
_REPLY_KEYS: Final = frozenset(
    {
        "version",
        "endpoint",
        "instance_id",
        "api_version",
        "certificate_sha256",
        "certificate_pem",
        "credential_id",
        "bearer",
    }
)
_ERROR_CODE_MAX: Final = 64
_ERROR_MESSAGE_MAX: Final = 512


@dataclass(frozen=True, slots=True)
class BootstrapReply:
    """A validated bootstrap reply. ``repr`` never shows the bearer."""

    endpoint: Endpoint
    instance_id: str
    certificate: LeafCertificate
    credential_id: str
    bearer: Bearer


def encode_frame(obj: dict[str, object]) -> bytes:
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise SidecarError(
            "the bootstrap request is larger than 64 KiB", reason=LocalReason.BOOTSTRAP_TOO_LARGE
        )
    return struct.pack(">I", len(body)) + body


def encode_request(options: SidecarOptions, state_dir: Path) -> bytes:
    """The request frame: version, state folder, application and grant."""
    return encode_frame(
        {
            "version": BOOTSTRAP_VERSION,
            "state_dir": str(state_dir),
            "application_id": options.application_id,
            "grant": {
                "scopes": list(options.scopes),
                "roles": list(options.roles),
                "tools": list(options.tools),
            },
        }
    )


def _safe_token(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else ""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])


def parse_reply(body: bytes) -> BootstrapReply:
    """Validates one reply frame's body (everything, before anything is used)."""
    try:
        obj = load_json_object(body, what="the bootstrap reply", error=SidecarError)
    except SidecarError as exc:
        raise SidecarError(exc.message, reason=LocalReason.BOOTSTRAP_MALFORMED) from None
    # ``type(...) is int``: 1.0 and True compare equal to 1 but are not the integer 1.
    version = obj.get("version")
    if type(version) is not int or version != BOOTSTRAP_VERSION:
        raise SidecarError(
            "the bootstrap reply has an unknown version",
            reason=LocalReason.BOOTSTRAP_MALFORMED,
            metadata={"field": "version"},
        )
    if "error" in obj:
        error = obj["error"]
        if set(obj) != {"version", "error"} or not isinstance(error, dict):
            raise SidecarError(
                "the bootstrap error reply is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
            )
        code = _safe_token(error.get("code"), _ERROR_CODE_MAX) or "unknown"
        message = _safe_token(error.get("message"), _ERROR_MESSAGE_MAX)
        raise SidecarError(
            f"the sidecar refused to start: {message}",
            reason=LocalReason.BOOTSTRAP_REFUSED,
            metadata={"code": code},
        )
    if set(obj) != _REPLY_KEYS:
        unknown, missing = sorted(set(obj) - _REPLY_KEYS), sorted(_REPLY_KEYS - set(obj))
        raise SidecarError(
            f"the bootstrap reply members are wrong (unknown: {unknown}, missing: {missing})",
            reason=LocalReason.BOOTSTRAP_MALFORMED,
        )
    try:
        endpoint = parse_endpoint(obj["endpoint"])
    except DescriptorError as exc:
        raise SidecarError(
            exc.message, reason=LocalReason.BOOTSTRAP_MALFORMED, metadata={"field": "endpoint"}
        ) from None
    if not is_opaque_id(obj["instance_id"]):
        raise SidecarError(
            "the bootstrap instance_id is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    if not is_opaque_id(obj["credential_id"]):
        raise SidecarError(
            "the bootstrap credential_id is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    if obj["api_version"] != API_VERSION:
        raise SidecarError(
            "the bootstrap api_version is not v1alpha1", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    pin = obj["certificate_sha256"]
    if not is_pin(pin):
        raise SidecarError(
            "the bootstrap certificate_sha256 is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    pem = obj["certificate_pem"]
    # The cap of the daemon's certificate.pem holds for the reply's copy too.
    if not isinstance(pem, str) or not pem.isascii() or len(pem) > MAX_CERTIFICATE_BYTES:
        raise SidecarError(
            "the bootstrap certificate_pem is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    try:
        certificate = parse_leaf_certificate(pem.encode("ascii"), endpoint_host=endpoint.host)
    except CertificateError as exc:
        raise SidecarError(
            exc.message,
            reason=LocalReason.BOOTSTRAP_MALFORMED,
            metadata={"field": "certificate_pem"},
        ) from None
    if certificate.sha256 != pin:
        raise PinMismatchError("the bootstrap certificate does not hash to its pin")
    try:
        bearer = Bearer(obj["bearer"])
    except CredentialError:
        raise SidecarError(
            "the bootstrap bearer is malformed",
            reason=LocalReason.BOOTSTRAP_MALFORMED,
            metadata={"field": "bearer"},
        ) from None
    return BootstrapReply(
        endpoint=endpoint,
        instance_id=str(obj["instance_id"]),
        certificate=certificate,
        credential_id=str(obj["credential_id"]),
        bearer=bearer,
    )


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        wait = deadline - time.monotonic()
        if wait <= 0:
            raise SidecarError(
                "the sidecar did not answer in time", reason=LocalReason.BOOTSTRAP_TIMEOUT
            )
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        chunk = os.read(fd, remaining)
        if not chunk:
            raise SidecarError(
                "the sidecar closed the bootstrap pipe early", reason=LocalReason.BOOTSTRAP_EOF
            )
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_reply(fd: int, deadline: float) -> BootstrapReply:
    """Reads the reply frame from ``fd`` by ``deadline`` (``time.monotonic()``) and validates it."""
    (length,) = struct.unpack(">I", _read_exact(fd, 4, deadline))
    if length > MAX_FRAME:
        raise SidecarError(
            "the bootstrap reply is larger than 64 KiB",
            reason=LocalReason.BOOTSTRAP_MALFORMED,
        )
    return parse_reply(_read_exact(fd, length, deadline))
