"""The TLS version probe: tells a TLS 1.2-only listener from a worker that went away.

A handshake that the listener drops without a word carries no TLS evidence: some TLS
servers drop the alert they owe a client whose versions they refuse, so a TLS 1.2-only
listener looks just like a worker that died mid-handshake. One more, throwaway connection
offers TLS 1.2 alone; it trusts nothing and never carries application data (no bearer).
"""

from __future__ import annotations

import socket
import ssl

from ._descriptor import Endpoint


def answers_tls12(endpoint: Endpoint, timeout: float) -> bool:
    """True when the listener completes a TLS 1.2 handshake; nothing is sent after it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only the version matters to this probe
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        with (
            socket.create_connection((endpoint.host, endpoint.port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=endpoint.host) as tls,
        ):
            return tls.version() == "TLSv1.2"
    except (OSError, ssl.SSLError):
        return False
