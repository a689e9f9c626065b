"""A throw-away P-256 leaf certificate for the fake worker's loopback TLS listener."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
from dataclasses import dataclass


@dataclass(frozen=True)
class TestLeaf:
    """A self-signed CA=false leaf for 127.0.0.1 and its private key (PEM).

    Attributes:
        cert_pem: the certificate, PEM.
        key_pem: its private key, PEM (unencrypted PKCS#8).
        der: the certificate, DER.
    """

    __test__ = False  # not a pytest test class, despite the name

    cert_pem: bytes
    key_pem: bytes
    der: bytes

    @property
    def sha256(self) -> str:
        """Lower-case hex SHA-256 of the DER certificate, the pin a client expects."""
        return hashlib.sha256(self.der).hexdigest()


def make_test_leaf() -> TestLeaf:
    """Generates a fresh P-256 leaf valid for a month, with an IP SAN for 127.0.0.1.

    Returns:
        A :class:`TestLeaf`; its ``sha256`` is the pin to expect.
    """
    from cryptography import x509  # noqa: PLC0415 - only test helpers need it
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "colossus-fake-worker")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    return TestLeaf(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        der=cert.public_bytes(serialization.Encoding.DER),
    )
