"""Derives the worker's TLS identity from its seed (see tls.py): HKDF for the private scalar,
serial and instance ID, and a certificate signed with deterministic ECDSA (RFC 6979)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import NameOID

from .tls_identity import TlsIdentity

_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_NOT_BEFORE = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
_NOT_AFTER = datetime.datetime(2049, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc)


def _derive(seed: bytes, label: str, length: int) -> bytes:
    return HKDF(hashes.SHA256(), length, salt=None, info=label.encode()).derive(seed)


def derive_identity(seed: bytes, host: str, scratch_dir: Path) -> TlsIdentity:
    """The leaf, its key, pin and instance ID that ``seed`` gives for ``host``."""
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
        scratch_dir=scratch_dir,
    )
