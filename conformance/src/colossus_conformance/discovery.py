"""Crafts broken copies of a worker's discovery folder for the pin-check cases.

The runner never edits the worker's real ``--public-api-dir``. For a case that
declares a ``discovery`` mutation it copies ``endpoint.json`` and
``certificate.pem`` into a fresh private folder, applies the mutation, and
hands that folder to the client instead. The worker keeps serving its genuine
identity, so whatever the client does, the worker's observations show
whether a bearer reached it.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Crafted:
    """A prepared discovery folder and the pin its descriptor carries."""

    public_api_dir: Path
    descriptor_pin: str | None


def _self_signed(
    ca: bool, host: str = "127.0.0.1", basic_constraints: bool = True
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "conformance-crafted")])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False
        )
    )
    if basic_constraints:
        builder = builder.add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    return builder.sign(key, hashes.SHA256()), key


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def sha256_of_pem(pem: bytes) -> str:
    cert = x509.load_pem_x509_certificate(pem)
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def craft(real_dir: Path, spec: dict[str, Any], parent: Path) -> Crafted:
    """Copies ``real_dir`` into a new 0700 folder under ``parent`` and applies ``spec``."""
    dest = Path(tempfile.mkdtemp(prefix="discovery-", dir=parent))
    os.chmod(dest, 0o700)
    descriptor: dict[str, Any] = json.loads((real_dir / "endpoint.json").read_text())
    certificate = (real_dir / "certificate.pem").read_bytes()

    cert_spec = spec.get("certificate", {})
    variant = cert_spec.get("variant")
    if variant == "bundle":
        other, _ = _self_signed(ca=False)
        certificate = certificate + _pem(other)
    elif variant == "with-private-key":
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = certificate + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    elif variant == "trailing-garbage":
        certificate = certificate + b"not part of any PEM block\n"
    elif variant == "ca-true":
        # A self-consistent CA certificate: the descriptor pin is updated to
        # match, so only the BasicConstraints rule can catch it.
        ca_cert, _ = _self_signed(ca=True)
        certificate = _pem(ca_cert)
        descriptor["certificate_sha256"] = sha256_of_pem(certificate)
    elif variant == "no-basic-constraints":
        # Self-consistent too, and not a CA either: only the rule that the extension must
        # be present (a reader defaulting a missing one to CA=false passes it) can catch it.
        bare, _ = _self_signed(ca=False, basic_constraints=False)
        certificate = _pem(bare)
        descriptor["certificate_sha256"] = sha256_of_pem(certificate)
    elif variant == "other-leaf":
        other, _ = _self_signed(ca=False)
        certificate = _pem(other)
    elif variant == "empty":
        certificate = b""
    elif variant == "der":
        cert = x509.load_pem_x509_certificate(certificate)
        certificate = cert.public_bytes(serialization.Encoding.DER)

    desc_spec = spec.get("descriptor", {})
    for name in desc_spec.get("delete", []):
        descriptor.pop(name, None)
    descriptor.update(desc_spec.get("set", {}))
    if "endpoint" in desc_spec:
        port = urlsplit(json.loads((real_dir / "endpoint.json").read_text())["endpoint"]).port
        descriptor["endpoint"] = desc_spec["endpoint"].replace("{port}", str(port))
    pin_rule = desc_spec.get("pin")
    if pin_rule == "uppercase":
        descriptor["certificate_sha256"] = descriptor["certificate_sha256"].upper()
    elif pin_rule == "short":
        descriptor["certificate_sha256"] = descriptor["certificate_sha256"][:63]
    elif pin_rule == "certificate" and certificate:
        descriptor["certificate_sha256"] = sha256_of_pem(certificate)

    if "raw" in desc_spec:
        descriptor_bytes = desc_spec["raw"].encode()
    elif "duplicate" in desc_spec:
        # The repeated member carries the same value twice, so the document
        # is right whichever copy a reader keeps: only the duplicate rule can
        # catch it.
        repeated = desc_spec["duplicate"]
        members = [*descriptor.items(), (repeated, descriptor[repeated])]
        lines = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in members)
        descriptor_bytes = ("{\n" + lines + "\n}").encode()
    else:
        descriptor_bytes = json.dumps(descriptor, indent=2).encode()
    if "pad_to_bytes" in desc_spec:
        # Whitespace keeps the JSON valid, so only the size rule can catch it.
        missing = desc_spec["pad_to_bytes"] - len(descriptor_bytes)
        descriptor_bytes = descriptor_bytes[:-1] + b" " * max(missing, 0) + descriptor_bytes[-1:]

    if not desc_spec.get("absent"):
        desc_mode = desc_spec.get("mode", 0o600)
        _place(dest / "endpoint.json", descriptor_bytes, desc_mode, desc_spec.get("symlink", False))
    if not cert_spec.get("absent"):
        cert_mode = cert_spec.get("mode", 0o600)
        _place(dest / "certificate.pem", certificate, cert_mode, cert_spec.get("symlink", False))
    if "dir_mode" in spec:
        os.chmod(dest, spec["dir_mode"])
    pin = descriptor.get("certificate_sha256")
    return Crafted(dest, pin if isinstance(pin, str) else None)


def _place(path: Path, data: bytes, mode: int, symlink: bool) -> None:
    if not symlink:
        _write(path, data, mode)
        return
    # The link points at a private, owner-only copy with the genuine content,
    # so only a reader that refuses to follow links can tell.
    target_dir = Path(tempfile.mkdtemp(prefix="link-target-", dir=path.parent.parent))
    os.chmod(target_dir, 0o700)
    _write(target_dir / path.name, data, mode)
    path.symlink_to(target_dir / path.name)


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)


def copy_genuine(real_dir: Path, parent: Path) -> Crafted:
    """A faithful private copy (used when a case wants a stable snapshot)."""
    return craft(real_dir, {}, parent)
