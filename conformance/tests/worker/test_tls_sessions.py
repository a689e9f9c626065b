"""Every TLS connection shows the pinned leaf: no session tickets, no resumption (W1).

A resumed TLS 1.3 session skips the certificate, so a client that pins the leaf
would have nothing to check. The worker issues no tickets, and a client that
offers an earlier session still gets a full handshake.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import ssl


def _connect(worker, ctx: ssl.SSLContext, session: ssl.SSLSession | None = None):
    host, port = worker.target.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=10)
    tls = ctx.wrap_socket(raw, server_hostname=host, session=session)
    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    tls.settimeout(2)
    with contextlib.suppress(TimeoutError):
        tls.recv(4096)  # the server's SETTINGS; TLS 1.3 tickets would come with it
    return tls


def test_no_session_tickets_and_no_resumption(make_worker):
    worker = make_worker()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=worker.pem.decode())
    ctx.set_alpn_protocols(["h2"])
    first = _connect(worker, ctx)
    session = first.session
    assert first.version() == "TLSv1.3"
    assert session is None or not session.has_ticket
    first.close()
    second = _connect(worker, ctx, session)
    try:
        assert not second.session_reused
        leaf = second.getpeercert(binary_form=True)
        assert leaf is not None
        assert hashlib.sha256(leaf).hexdigest() == worker.descriptor["certificate_sha256"]
    finally:
        second.close()
