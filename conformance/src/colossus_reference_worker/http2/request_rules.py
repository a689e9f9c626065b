"""What makes an HTTP/2 request's header list malformed (RFC 9113, sections 8.2 and 8.3).

grpclib turns h2's own header validation off, and h2 would make any failure
a connection error anyway, cutting off every call on the connection. The
worker checks each request here instead, so a malformed one is refused as a
stream error (see ``stream_errors``) and never reaches a handler.
"""

from __future__ import annotations

from collections.abc import Iterable

# The request pseudo-header fields; ``:protocol`` needs SETTINGS_ENABLE_CONNECT_PROTOCOL,
# which the worker never sends.
_REQUEST_PSEUDO = frozenset({":method", ":scheme", ":authority", ":path"})
# Fields that only mean something to one HTTP/1.1 hop (RFC 9113, 8.2.2).
_CONNECTION_SPECIFIC = frozenset({"connection", "proxy-connection", "keep-alive",
                                  "transfer-encoding", "upgrade"})
# Not allowed anywhere in a field name: controls, space, upper case, DEL and above (8.2.1).
_BAD_NAME_CHARS = frozenset(chr(c) for c in (*range(0x21), *range(0x41, 0x5B), *range(0x7F, 0x100)))
_BAD_VALUE_CHARS = frozenset("\x00\r\n")
_EDGE_WHITESPACE = (" ", "\t")


def _field_problem(name: str, value: str) -> str | None:
    bare = name[1:] if name.startswith(":") else name
    if not bare:
        return "an empty field name"
    if ":" in bare or not _BAD_NAME_CHARS.isdisjoint(bare):
        return f"the field name {name!r} has a character HTTP/2 forbids there"
    if not _BAD_VALUE_CHARS.isdisjoint(value):
        return f"the value of {name!r} holds NUL, CR or LF"
    if value.startswith(_EDGE_WHITESPACE) or value.endswith(_EDGE_WHITESPACE):
        return f"the value of {name!r} starts or ends with whitespace"
    if name in _CONNECTION_SPECIFIC:
        return f"the connection-specific field {name!r}"
    if name == "te" and value != "trailers":
        return "a te field other than 'trailers'"
    return None


def request_problem(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why a request's header list is malformed, or ``None`` when it is well-formed."""
    pseudo: dict[str, str] = {}
    regular_seen = False
    for name, value in headers:
        problem = _field_problem(name, value)
        if problem is not None:
            return problem
        if not name.startswith(":"):
            regular_seen = True
            continue
        if name not in _REQUEST_PSEUDO:
            return f"the pseudo-header {name!r} is not one a request may carry"
        if regular_seen:
            return f"the pseudo-header {name!r} follows a regular field"
        if name in pseudo:
            return f"the pseudo-header {name!r} appears twice"
        pseudo[name] = value
    method = pseudo.get(":method")
    if method is None:
        return "no :method"
    if method == "CONNECT":  # a tunnel: the authority only (8.5)
        if ":authority" not in pseudo or ":scheme" in pseudo or ":path" in pseudo:
            return "a CONNECT request needs :authority and no :scheme or :path"
        return None
    if ":scheme" not in pseudo:
        return "no :scheme"
    if not pseudo.get(":path"):
        return "no :path, or an empty one"
    return None


def trailer_problem(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why a request's trailer section is malformed, or ``None``."""
    for name, value in headers:
        if name.startswith(":"):
            return f"the pseudo-header {name!r} in trailers"
        problem = _field_problem(name, value)
        if problem is not None:
            return problem
    return None
