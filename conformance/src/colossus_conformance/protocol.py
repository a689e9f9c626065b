"""Codec for the conformance client protocol.

Two channels connect the runner to a client (see ``docs/client-protocol.md``):

- stdin/stdout carry JSON lines: one UTF-8 JSON object per line, in both
  directions;
- a separate inherited pipe carries bearers, each framed as a 4-byte
  big-endian length followed by the bearer's bytes.

This module only encodes, decodes and validates messages. It knows nothing
about processes or cases.
"""

from __future__ import annotations

import json
import struct
from importlib import resources
from typing import Any, BinaryIO

import jsonschema

PROTOCOL_VERSION = 1

# A generous ceiling for one JSON line. Observations of a long watch stay far
# below it; anything larger is a client bug, not data to buffer forever.
MAX_LINE_BYTES = 16 * 1024 * 1024

# Bearers are at most 256 visible ASCII characters; the frame allows slack so
# the runner can send deliberately malformed (longer) bearers to test C5.
MAX_BEARER_FRAME = 4096


class ProtocolError(Exception):
    """A message broke the framing or the schema."""


def _load_schema() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("schemas/client-protocol.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


_SCHEMA = _load_schema()
_VALIDATOR = jsonschema.Draft202012Validator(_SCHEMA)


def schema() -> dict[str, Any]:
    """Returns the JSON schema every protocol message must satisfy."""
    return _SCHEMA


def validate_message(message: Any) -> None:
    """Raises ProtocolError unless ``message`` satisfies the protocol schema."""
    errors = sorted(_VALIDATOR.iter_errors(message), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "<root>"
        raise ProtocolError(f"message invalid at {where}: {first.message}")


def encode_line(message: dict[str, Any]) -> bytes:
    """Encodes one message as a JSON line (compact, UTF-8, newline-terminated)."""
    data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(data) + 1 > MAX_LINE_BYTES:
        raise ProtocolError("message exceeds the line limit")
    return data + b"\n"


def decode_line(line: bytes) -> dict[str, Any]:
    """Decodes and validates one JSON line received from a client."""
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError("line exceeds the limit")
    stripped = line.strip()
    if not stripped:
        raise ProtocolError("empty line")
    try:
        message = json.loads(stripped.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"not a JSON line: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    validate_message(message)
    return message


def encode_bearer_frame(bearer: str | bytes) -> bytes:
    """Frames one bearer for the bearer pipe: 4-byte big-endian length, bytes."""
    data = bearer.encode("utf-8") if isinstance(bearer, str) else bearer
    if len(data) > MAX_BEARER_FRAME:
        raise ProtocolError("bearer frame too large")
    return struct.pack(">I", len(data)) + data


def read_bearer_frame(stream: BinaryIO) -> bytes:
    """Reads one bearer frame; used by tests and by the Python client."""
    header = _read_exact(stream, 4)
    (length,) = struct.unpack(">I", header)
    if length > MAX_BEARER_FRAME:
        raise ProtocolError("bearer frame too large")
    return _read_exact(stream, length)


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = stream.read(n - len(chunks))
        if not chunk:
            raise ProtocolError("bearer pipe closed mid-frame")
        chunks.extend(chunk)
    return bytes(chunks)


def hello() -> dict[str, Any]:
    """The runner's opening message."""
    return {"type": "hello", "protocol_version": PROTOCOL_VERSION}


def release(case: str, step: str) -> dict[str, Any]:
    """Lets a client waiting at a sync point carry on."""
    return {"type": "release", "case": case, "step": step}


def shutdown() -> dict[str, Any]:
    """Asks the client to exit cleanly."""
    return {"type": "shutdown"}
