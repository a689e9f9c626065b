"""The worker's TLS identity as a value (W1): its leaf, key and pin, and the server context.

``tls.py`` loads it (from the state folder's cache, else by deriving it from the seed with
``tls_derive.py``); both produce this value and neither imports the other.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsIdentity:
    """The leaf and what is derived from it."""

    instance_id: str
    host: str
    certificate_pem: bytes
    private_key_pem: bytes
    certificate_sha256: str
    scratch_dir: Path | None = None

    def server_context(self) -> ssl.SSLContext:
        """A server context that speaks TLS 1.3 only and offers HTTP/2."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.maximum_version = ssl.TLSVersion.TLSv1_3
        ctx.set_alpn_protocols(["h2"])
        # No session tickets: a resumed TLS 1.3 session skips the certificate, and
        # every connection must show a pinning client the leaf it checks.
        ctx.num_tickets = 0
        load_chain(ctx, self.certificate_pem, self.private_key_pem, self.scratch_dir)
        return ctx


def load_chain(
    ctx: ssl.SSLContext, cert_pem: bytes, key_pem: bytes, scratch_dir: Path | None = None
) -> None:
    """Load PEM material into ``ctx`` through a short-lived 0600 file in ``scratch_dir``."""
    fd, name = tempfile.mkstemp(prefix=".leaf-", suffix=".pem", dir=scratch_dir)
    try:
        os.write(fd, key_pem + cert_pem)
        os.close(fd)
        ctx.load_cert_chain(name)
    finally:
        os.unlink(name)
