"""Strict reader for the worker's leaf certificate (C2).

Accepts exactly one PEM ``CERTIFICATE`` block and nothing else (no bundle, no key, no
trailing text), whose certificate is an end-entity (BasicConstraints CA=false) with a
P-256 key. The SHA-256 of its DER is the pin everything else is compared with.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import ipaddress
import re
from dataclasses import dataclass
from typing import Final

from .._errors import CertificateError
from ._certificate_shape import check_shape

_PEM_RE: Final = re.compile(
    rb"-----BEGIN CERTIFICATE-----\r?\n"
    rb"((?:[A-Za-z0-9+/=]{1,76}\r?\n)+)"
    rb"-----END CERTIFICATE-----(?:\r?\n)?"
)


@dataclass(frozen=True, slots=True)
class LeafCertificate:
    """A validated leaf certificate."""

    der: bytes
    sha256: str
    """Lower-case hex SHA-256 of ``der``: the pin."""

    @property
    def pem(self) -> bytes:
        """A canonical PEM encoding of ``der``, used as the channel's only trust anchor."""
        body = base64.encodebytes(self.der)
        return b"-----BEGIN CERTIFICATE-----\n" + body + b"-----END CERTIFICATE-----\n"


def sha256_hex(der: bytes) -> str:
    """Lower-case hex SHA-256, the pin format."""
    return hashlib.sha256(der).hexdigest()


def parse_leaf_certificate(pem: bytes, *, endpoint_host: str | None = None) -> LeafCertificate:
    """Validates one PEM leaf; with ``endpoint_host``, also requires an IP SAN for it."""
    match = _PEM_RE.fullmatch(pem)
    if match is None:
        raise CertificateError(
            "the certificate must be exactly one PEM CERTIFICATE block with nothing else"
        )
    body = b"".join(match.group(1).split())
    try:
        der = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise CertificateError("the certificate's base64 body is malformed") from None
    # Only the canonical encoding: the decoder ignores excess padding and non-zero unused
    # bits, which the other SDKs refuse.
    if base64.b64encode(der) != body:
        raise CertificateError("the certificate's base64 body is not canonical")
    return validate_leaf_der(der, endpoint_host=endpoint_host)


def validate_leaf_der(der: bytes, *, endpoint_host: str | None = None) -> LeafCertificate:
    """Checks a DER certificate: CA=false, P-256 key, loopback IP SAN when asked.

    Whatever a hostile certificate makes the parser raise (bad version, duplicate
    extensions, an invalid or unsupported key, malformed fields) becomes a
    :class:`CertificateError`; nothing else escapes.
    """
    _check_one_der_value(der)
    try:
        check_shape(der)
        _check_leaf(der, endpoint_host)
    except CertificateError:
        raise
    except Exception as exc:
        # ValueError ("Invalid key"), UnsupportedAlgorithm, x509.InvalidVersion,
        # x509.DuplicateExtension...: the last two derive from Exception only, so any
        # exception cryptography raises while reading the certificate counts as malformed.
        if isinstance(exc, ValueError | TypeError) or type(exc).__module__.startswith(
            "cryptography."
        ):
            raise CertificateError(f"the certificate is malformed ({type(exc).__name__})") from None
        raise
    return LeafCertificate(der=der, sha256=sha256_hex(der))


def _check_one_der_value(der: bytes) -> None:
    """Requires ``der`` to be exactly one DER SEQUENCE, with nothing after it.

    Checked here rather than left to the X.509 parser: older cryptography releases the
    SDK supports accept trailing bytes (a second certificate in the same armour, say).
    """
    if len(der) < 2 or der[0] != 0x30:
        raise CertificateError("the certificate is not a DER SEQUENCE")
    first = der[1]
    if first < 0x80:
        header, length = 2, first
    else:
        count = first & 0x7F
        # Long form: 1-4 length bytes, minimal (no leading zero, not under 128).
        if not 1 <= count <= 4 or len(der) < 2 + count or der[2] == 0:
            raise CertificateError("the certificate's DER length is malformed")
        header, length = 2 + count, int.from_bytes(der[2 : 2 + count], "big")
        if length < 0x80:
            raise CertificateError("the certificate's DER length is malformed")
    if header + length != len(der):
        raise CertificateError("the certificate's DER has bytes before or after its one value")


@functools.lru_cache(maxsize=16)
def _check_leaf(der: bytes, endpoint_host: str | None) -> None:
    # The verdict depends on these bytes alone, so a pass is remembered (a refusal raises
    # and is not): connecting again to the same worker skips parsing its certificate.
    # Imported here, not at module level: cryptography is needed only once a certificate
    # is read, and importing it costs more than the rest of the SDK together.
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415

    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError:
        raise CertificateError("the certificate is not valid DER X.509") from None
    try:
        constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        raise CertificateError("the certificate has no BasicConstraints extension") from None
    if constraints.ca:
        raise CertificateError("the certificate is a CA certificate; a leaf is required")
    # The names are parsed on first use: read them, so a malformed one is refused here.
    _ = cert.subject, cert.issuer
    key = cert.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise CertificateError("the certificate key must be ECDSA P-256")
    if endpoint_host is not None:
        try:
            san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            raise CertificateError("the certificate has no subjectAltName") from None
        wanted = ipaddress.ip_address(endpoint_host)
        if wanted not in san.get_values_for_type(x509.IPAddress):
            raise CertificateError("the certificate has no IP SAN for the endpoint address")
