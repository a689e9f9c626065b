"""Deliberately wrong TLS listeners for the conformance suite (W15).

Each variant keeps the discovery files truthful, so only a client that checks
the live handshake notices the problem:

``tls12``
    the genuine leaf, but only TLS 1.2 is offered;
``foreign-leaf``
    a freshly generated self-signed P-256 leaf for the same address;
``leaf-with-intermediate``
    the genuine leaf followed by an extra CA certificate;
``no-h2-alpn``
    the genuine leaf over TLS 1.3, but ALPN offers only ``http/1.1``, so a client asking
    for ``h2`` agrees to no protocol; the worker serves HTTP/2 on it anyway
    (:meth:`FaultHooks.serve_without_h2`), so a client that ignores ALPN gets answers and
    sends its bearer, which the case sees.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator

from ..fault_flags import ListenerVariant


@contextlib.contextmanager
def _pem_path(data: bytes) -> Iterator[str]:
    """A path ``ssl`` can load ``data`` from; an anonymous memfd where possible."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("colossus-fault-pem", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    folder = tempfile.mkdtemp(prefix="colossus-fault-")
    path = os.path.join(folder, "material.pem")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.rmdir(folder)


def _context(chain_pem: bytes, key_pem: bytes, *, tls12: bool, alpn: str = "h2") -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if tls12:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    else:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols([alpn])
    with _pem_path(chain_pem) as cert_path, _pem_path(key_pem) as key_path:
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


def build_listener_context(
    variant: ListenerVariant,
    *,
    certificate_pem: bytes,
    private_key_pem: bytes,
    host: str,
) -> ssl.SSLContext:
    """The server-side TLS context for ``variant``."""
    if variant is ListenerVariant.TLS12:
        return _context(certificate_pem, private_key_pem, tls12=True)
    if variant is ListenerVariant.NO_H2_ALPN:
        return _context(certificate_pem, private_key_pem, tls12=False, alpn="http/1.1")
    # Only the variants that mint certificates import `cryptography` (70 ms of a start).
    from .certificates import key_pem, self_signed

    if variant is ListenerVariant.FOREIGN_LEAF:
        leaf, key = self_signed(host, ca=False)
        return _context(leaf, key_pem(key), tls12=False)
    if variant is ListenerVariant.LEAF_WITH_INTERMEDIATE:
        extra, _ = self_signed(host, ca=True)
        chain = certificate_pem.rstrip(b"\n") + b"\n" + extra
        return _context(chain, private_key_pem, tls12=False)
    raise ValueError(f"unknown listener variant {variant!r}")
