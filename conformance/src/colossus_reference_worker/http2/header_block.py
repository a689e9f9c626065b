"""The size of each request's whole header block, for the per-request header limit (W11).

grpclib hands a handler only the metadata it keeps: no pseudo-headers, no
``te``, ``content-type`` or ``user-agent``, no ``grpc-*`` header. A limit
counted on that metadata lets a 60 KiB ``user-agent`` or ``grpc-anything``
header through, so the listener keeps each request's raw header list on its
stream, and the pipeline counts all of it the way HTTP/2 does (RFC 9113,
section 6.5.2: name and value lengths plus 32 bytes per field).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Headers = Iterable[tuple[str, "str | bytes"]]


def keep_request_headers(protocol: Any) -> None:
    """Make one grpclib server connection store each request's header list on its stream.

    Call it once the protocol's ``connection_made`` has built its events processor.
    """
    handler = protocol.processor.handler
    accept = handler.accept

    def accept_keeping_headers(stream: Any, headers: Any, release_stream: Any) -> Any:
        # grpclib's stream has a ``headers`` slot that only its clients use.
        stream.headers = headers
        return accept(stream, headers, release_stream)

    handler.accept = accept_keeping_headers


def header_list_size(headers: Headers) -> int:
    """The HTTP/2 size of a header list."""
    return sum(len(name) + len(value) + 32 for name, value in headers)


def request_header_size(stream: Any) -> int | None:
    """The size of the call's whole header block, or ``None`` if the listener kept none."""
    headers = getattr(getattr(stream, "_stream", None), "headers", None)
    return None if headers is None else header_list_size(headers)
