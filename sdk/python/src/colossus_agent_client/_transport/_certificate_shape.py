"""The DER shape every SDK requires of the worker's leaf (C2), checked byte by byte.

X.509 parsers differ in what they let through; these rules are the same in the four SDKs
(sdk/go/certificate_shape.go, sdk/typescript/src/transport/certificate-shape.ts,
crates/colossus-sdk/src/trust/certificate_shape.rs), so each
gives the same verdict on the same bytes (conformance/parsers_diff compares them).
"""

from __future__ import annotations

import datetime
import re
from typing import Final

from .._errors import CertificateError

# The shape every SDK requires of a leaf, beyond what its X.509 parser checks (the same
# rules in the TypeScript and Go SDKs, so the three give one verdict): a v3 certificate
# with a positive serial, the same signature algorithm inside and outside the
# tbsCertificate, RFC 5280 times, an uncompressed P-256 key, nothing after the extensions,
# and DER extension values, BasicConstraints being exactly the empty SEQUENCE (CA=false).
_VERSION_3: Final = bytes.fromhex("a003020102")
_P256_SPKI: Final = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d03010703420004")
_BASIC_CONSTRAINTS: Final = bytes.fromhex("0603551d13")
_LEAF_CONSTRAINTS: Final = b"\x30\x00"
_DER_TRUE: Final = b"\x01\x01\xff"
_SAN: Final = bytes.fromhex("0603551d11")
_KEY_USAGE: Final = bytes.fromhex("0603551d0f")
_EXTENDED_KEY_USAGE: Final = bytes.fromhex("0603551d25")
_SUBJECT_KEY_ID: Final = bytes.fromhex("0603551d0e")
_AUTHORITY_KEY_ID: Final = bytes.fromhex("0603551d23")
_AUTHORITY_KEY_ID_FIELDS: Final = ([0x80], [0xA1, 0x82], [0x80, 0xA1, 0x82])
# CA-only extensions, and those that only a path validator would read: not on this leaf.
_REFUSED_EXTENSIONS: Final = frozenset(
    bytes.fromhex(oid)
    for oid in (
        "0603551d1e",  # nameConstraints
        "0603551d1f",  # cRLDistributionPoints
        "0603551d20",  # certificatePolicies
        "0603551d21",  # policyMappings
        "0603551d24",  # policyConstraints
        "0603551d36",  # inhibitAnyPolicy
        "06082b06010505070101",  # authorityInfoAccess
    )
)
_UTC_TIME: Final = re.compile(rb"[0-9]{12}Z")
_GENERALIZED_TIME: Final = re.compile(rb"[0-9]{14}Z")
_PRINTABLE: Final = re.compile(rb"[A-Za-z0-9 '()+,\-./:=?]*")
_DNS_NAME: Final = re.compile(rb"[\x21-\x7e]+")
_AFTER_KEY: Final = ([0xA3], [0x81, 0xA3], [0x82, 0xA3], [0x81, 0x82, 0xA3])


def _elements(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """(tag, whole element, content) of each DER element in ``data``, minimal lengths only."""
    out: list[tuple[int, bytes, bytes]] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 2:
            raise CertificateError("the certificate's DER is truncated")
        start, length = pos + 2, data[pos + 1]
        if length >= 0x80:
            count = length & 0x7F
            if not 1 <= count <= 4 or start + count > len(data) or data[start] == 0:
                raise CertificateError("the certificate's DER length is malformed")
            length = int.from_bytes(data[start : start + count], "big")
            start += count
            if length < 0x80:
                raise CertificateError("the certificate's DER length is malformed")
        end = start + length
        if end > len(data):
            raise CertificateError("the certificate's DER is truncated")
        out.append((data[pos], data[pos:end], data[start:end]))
        pos = end
    return out


def _walk(elements: list[tuple[int, bytes, bytes]]) -> None:
    """Parses every element below, so a non-DER length or primitive anywhere is refused."""
    for tag, _, content in elements:
        if tag & 0x20:
            _walk(_elements(content))
        elif not _is_der_primitive(tag, content):
            raise CertificateError(f"the certificate holds a malformed DER value (tag {tag:#04x})")


def _is_der_primitive(tag: int, content: bytes) -> bool:
    """BOOLEAN, INTEGER, BIT STRING and OBJECT IDENTIFIER in their one DER form."""
    if tag == 0x01:
        return content in (b"\x00", b"\xff")
    if tag == 0x02:
        redundant = len(content) > 1 and (content[0], content[1] >= 0x80) in (
            (0, False),
            (0xFF, True),
        )
        return bool(content) and not redundant
    if tag == 0x03:
        unused = content[0] if content else 8
        if len(content) == 1:
            return unused == 0
        return unused <= 7 and content[-1] & ((1 << unused) - 1) == 0
    if tag == 0x06:
        starts = (b for i, b in enumerate(content) if i == 0 or content[i - 1] < 0x80)
        return bool(content) and content[-1] < 0x80 and 0x80 not in starts
    return True


def check_shape(der: bytes) -> None:
    _walk(_elements(der))
    outer = _elements(_elements(der)[0][2])
    if [tag for tag, _, _ in outer] != [0x30, 0x30, 0x03]:
        raise CertificateError("the certificate is not tbsCertificate, algorithm, signature")
    tbs = _elements(outer[0][2])
    if len(tbs) < 8 or tbs[0][1] != _VERSION_3:
        raise CertificateError("the certificate must be X.509 version 3")
    serial = tbs[1]
    if serial[0] != 0x02 or serial[2] in (b"", b"\x00") or serial[2][0] >= 0x80:
        raise CertificateError("the certificate's serial number is not positive")
    if tbs[2][1] != outer[1][1]:
        raise CertificateError("the certificate names two different signature algorithms")
    times = _elements(tbs[4][2])
    if len(times) != 2 or not all(_is_time(tag, content) for tag, _, content in times):
        raise CertificateError("the certificate's validity times are malformed")
    for name in (tbs[3], tbs[5]):
        _check_name(name)
    if len(tbs[6][1]) != len(_P256_SPKI) + 64 or not tbs[6][1].startswith(_P256_SPKI):
        raise CertificateError("the certificate key must be an uncompressed ECDSA P-256 point")
    if [tag for tag, _, _ in tbs[7:]] not in _AFTER_KEY:
        raise CertificateError("the certificate has unexpected fields after its key")
    wrapper = _elements(tbs[-1][2])
    if len(wrapper) != 1 or wrapper[0][0] != 0x30:
        raise CertificateError("the certificate's extensions are malformed")
    for tag, _, extension in _elements(wrapper[0][2]):
        if tag != 0x30:
            raise CertificateError("the certificate has a malformed extension")
        _check_extension(_elements(extension))


def _check_extension(fields: list[tuple[int, bytes, bytes]]) -> None:
    if len(fields) == 3 and fields[1][1] == _DER_TRUE:
        fields = [fields[0], fields[2]]
    if len(fields) != 2 or fields[0][0] != 0x06 or fields[1][0] != 0x04:
        raise CertificateError("the certificate has a malformed extension")
    value = _elements(fields[1][2])
    if len(value) != 1:
        raise CertificateError("a certificate extension's value is not one DER element")
    _walk(value)
    oid, (tag, _, content) = fields[0][1], value[0]
    if oid in _REFUSED_EXTENSIONS:
        raise CertificateError("the certificate carries an extension a leaf may not have")
    inner = _elements(content) if tag & 0x20 else []
    shapes = {
        _KEY_USAGE: tag == 0x03 and len(content) >= 2,
        _EXTENDED_KEY_USAGE: tag == 0x30 and bool(inner) and all(t == 0x06 for t, _, _ in inner),
        _SUBJECT_KEY_ID: tag == 0x04,
        _AUTHORITY_KEY_ID: tag == 0x30 and [t for t, _, _ in inner] in _AUTHORITY_KEY_ID_FIELDS,
    }
    if not shapes.get(oid, True):
        raise CertificateError("a certificate extension's value has the wrong shape")
    if oid == _SAN:
        _check_san(value[0])
    if fields[0][1] == _BASIC_CONSTRAINTS and fields[1][2] != _LEAF_CONSTRAINTS:
        raise CertificateError(
            "the certificate's BasicConstraints is not exactly CA=false (a CA, a path length "
            "or a non-DER encoding)"
        )


def _is_time(tag: int, content: bytes) -> bool:
    """UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ naming a real instant."""
    if tag == 0x17 and _UTC_TIME.fullmatch(content):
        year, rest = int(content[:2]), content[2:12]
        year += 1900 if year >= 50 else 2000
    elif tag == 0x18 and _GENERALIZED_TIME.fullmatch(content):
        year, rest = int(content[:4]), content[4:14]
    else:
        return False
    month, day, hour, minute, second = (int(rest[i : i + 2]) for i in range(0, 10, 2))
    try:
        datetime.datetime(year, month, day, hour, minute, second)  # only a range check
    except ValueError:
        return False
    return True


def _check_name(name: tuple[int, bytes, bytes]) -> None:
    """A Name of RDNs whose values are UTF8String, PrintableString or IA5String, well formed."""
    if name[0] != 0x30:
        raise CertificateError("the certificate's issuer or subject is malformed")
    for set_tag, _, rdn in _elements(name[2]):
        attributes = _elements(rdn)
        if set_tag != 0x31 or not attributes:
            raise CertificateError("the certificate's issuer or subject is malformed")
        for tag, _, attribute in attributes:
            fields = _elements(attribute)
            if tag != 0x30 or len(fields) != 2 or fields[0][0] != 0x06 or not _is_text(fields[1]):
                raise CertificateError(
                    "the certificate's issuer or subject holds a malformed value"
                )


def _is_text(value: tuple[int, bytes, bytes]) -> bool:
    tag, _, content = value
    if tag == 0x0C:
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True
    if tag == 0x13:
        return _PRINTABLE.fullmatch(content) is not None
    return tag == 0x16 and content.isascii()


def _check_san(value: tuple[int, bytes, bytes]) -> None:
    """subjectAltName: IP addresses (4 or 16 bytes) and visible-ASCII DNS names only."""
    names = _elements(value[2])
    if value[0] != 0x30 or not names:
        raise CertificateError("the certificate's subjectAltName is malformed")
    for tag, _, content in names:
        ip = tag == 0x87 and len(content) in (4, 16)
        if not ip and not (tag == 0x82 and _DNS_NAME.fullmatch(content)):
            raise CertificateError("the certificate's subjectAltName holds an unsupported name")
