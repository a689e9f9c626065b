"""The worker's TLS identity (W1): a deterministic P-256 leaf and TLS 1.3-only contexts.

A 32-byte seed in the state folder is the only input. The private scalar, the
certificate serial and the instance ID are derived from it with HKDF, and the
certificate is signed with deterministic ECDSA (RFC 6979), so the same seed
gives the byte-identical certificate, pin and instance ID on every start.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import NameOID

from .state import secret_file

_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_NOT_BEFORE = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
_NOT_AFTER = datetime.datetime(2049, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc)


def _derive(seed: bytes, label: str, length: int) -> bytes:
    return HKDF(hashes.SHA256(), length, salt=None, info=label.encode()).derive(seed)


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


def load_identity(state_dir: Path, host: str = "127.0.0.1") -> TlsIdentity:
    """Load (creating on first use) the seed and derive the identity from it."""
    seed = secret_file(state_dir / "tls-seed", 32)
    scalar = int.from_bytes(_derive(seed, "colossus-worker p256 leaf key", 48), "big")
    key = ec.derive_private_key(scalar % (_P256_ORDER - 1) + 1, ec.SECP256R1())
    serial = int.from_bytes(_derive(seed, "colossus-worker leaf serial", 16), "big") >> 1
    instance_id = "wkr_" + base64.b32encode(
        _derive(seed, "colossus-worker instance id", 15)
    ).decode().lower()
    ip = ipaddress.ip_address(host)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "colossus-reference-worker")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial or 1)
        .not_valid_before(_NOT_BEFORE)
        .not_valid_after(_NOT_AFTER)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ip)]), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(key, hashes.SHA256(), ecdsa_deterministic=True)
    )
    der = cert.public_bytes(serialization.Encoding.DER)
    return TlsIdentity(
        instance_id=instance_id,
        host=host,
        certificate_pem=cert.public_bytes(serialization.Encoding.PEM),
        private_key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        certificate_sha256=hashlib.sha256(der).hexdigest(),
        scratch_dir=state_dir,
    )
