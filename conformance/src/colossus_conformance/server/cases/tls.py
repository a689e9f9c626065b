"""The live handshake (W1): TLS 1.3 only, one pinned leaf, ALPN h2."""

from __future__ import annotations

import asyncio
import ipaddress
import ssl

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from ..catalogue import case, expect, expect_equal
from ..context import CaseContext
from ..tls_probe import handshake


@case("tls.only-tls13", ["W1"], "a TLS 1.2 client is refused; a TLS 1.3 client gets TLS 1.3 and h2")
async def only_tls13(ctx: CaseContext) -> None:
    host, port = ctx.worker.address
    old = await asyncio.to_thread(handshake, host, port, maximum=ssl.TLSVersion.TLSv1_2)
    expect(old.error, f"a TLS 1.2-only client completed a handshake ({old.version})")
    new = await asyncio.to_thread(handshake, host, port)
    expect(not new.error, f"a TLS 1.3 client failed: {new.error}")
    expect_equal(new.version, "TLSv1.3", "negotiated version")
    expect_equal(new.alpn, "h2", "negotiated ALPN")


@case(
    "tls.pinned-leaf-alone",
    ["W1"],
    "the server sends exactly one certificate: the pinned P-256 leaf, not a CA, with a loopback IP SAN",
)
async def pinned_leaf_alone(ctx: CaseContext) -> None:
    host, port = ctx.worker.address
    seen = await asyncio.to_thread(handshake, host, port)
    expect(not seen.error, f"handshake failed: {seen.error}")
    expect_equal(seen.certificates, 1, "certificates in the server's Certificate message")
    expect_equal(seen.leaf_sha256, ctx.worker.enrolments["alpha"].certificate_sha256, "live leaf SHA-256")
    pem = (ctx.worker.public_api_dir / "certificate.pem").read_bytes()
    leaf = x509.load_pem_x509_certificate(pem)
    key = leaf.public_key()
    expect(
        isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1", "the leaf is not P-256"
    )
    try:
        is_ca = leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    expect(not is_ca, "the leaf is a CA certificate")
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    addresses = sans.get_values_for_type(x509.IPAddress)
    expect(ipaddress.ip_address(host) in addresses, f"no IP SAN {host} (have {addresses})")


@case(
    "tls.alpn-h2-required",
    ["W1"],
    "a connection that did not negotiate ALPN h2 is closed after the handshake",
)
async def alpn_h2_required(ctx: CaseContext) -> None:
    host, port = ctx.worker.address
    seen = await asyncio.to_thread(handshake, host, port, alpn=["http/1.1"], wait_for_close=True)
    expect(seen.error or seen.alpn != "http/1.1", "the worker negotiated http/1.1")
    expect(seen.error or seen.closed_after_handshake, "the worker kept a connection without h2 open")
