"""What a worker's TLS listener shows a client: version, certificates, pin, ALPN (W1).

Plain blocking sockets with Python's ``ssl``, run in a thread by the cases. Python 3.10+
has the private ``get_unverified_chain``; it lists every certificate the server sent, so
"exactly one certificate" is one length check.
"""

from __future__ import annotations

import hashlib
import socket
import ssl
from dataclasses import dataclass

SECONDS = 5.0
# Shorter than any sane first-stream timeout, so a server that waits is not mistaken for one that hung up.
CLOSE_SECONDS = 2.0


@dataclass(frozen=True)
class Handshake:
    """One completed handshake, or the reason it failed (``error``)."""

    version: str = ""
    alpn: str | None = None
    certificates: int = 0
    leaf_sha256: str = ""
    error: str = ""
    closed_after_handshake: bool = False


def _context(minimum: ssl.TLSVersion, maximum: ssl.TLSVersion, alpn: list[str] | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = minimum
    context.maximum_version = maximum
    if alpn:
        context.set_alpn_protocols(alpn)
    return context


def handshake(
    host: str,
    port: int,
    *,
    maximum: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3,
    minimum: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
    alpn: list[str] | None = None,
    wait_for_close: bool = False,
) -> Handshake:
    """Connects once; ``wait_for_close`` also reports whether the server then hangs up."""
    context = _context(minimum, maximum, ["h2"] if alpn is None else alpn)
    try:
        with (
            socket.create_connection((host, port), timeout=SECONDS) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            chain = tls._sslobj.get_unverified_chain() or []  # type: ignore[attr-defined]
            leaf = tls.getpeercert(binary_form=True) or b""
            closed = False
            if wait_for_close:
                tls.settimeout(CLOSE_SECONDS)
                try:
                    closed = tls.recv(1) == b""
                except TimeoutError:
                    closed = False
                except (ssl.SSLError, OSError):
                    closed = True
            return Handshake(
                version=tls.version() or "",
                alpn=tls.selected_alpn_protocol(),
                certificates=len(chain),
                leaf_sha256=hashlib.sha256(leaf).hexdigest(),
                closed_after_handshake=closed,
            )
    except (ssl.SSLError, OSError) as exc:
        return Handshake(error=f"{type(exc).__name__}: {exc}")
