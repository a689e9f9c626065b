"""Certificates for the fuzzer: built with ``cryptography``, then edited at the DER level.

Every key is derived from the seed and every signature is deterministic (RFC 6979, or
PKCS#1 v1.5 / Ed25519 which are deterministic anyway), so one seed gives the same bytes on
every run. Edited certificates are signed again with the throwaway issuer key, so their
signatures stay valid over the edited ``tbsCertificate``.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from .der import Node, decode, encode, read_header, tlv

NOT_BEFORE = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
NOT_AFTER = datetime.datetime(2035, 12, 30, tzinfo=datetime.timezone.utc)
ECDSA_SHA256 = bytes.fromhex("06082a8648ce3d040302")
ECDSA_SHA384 = bytes.fromhex("06082a8648ce3d040303")
OID_BASIC_CONSTRAINTS = bytes.fromhex("0603551d13")
OID_SAN = bytes.fromhex("0603551d11")

IssuerKey = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Cert:
    """A certificate variant: its DER, the endpoint host it is checked against, its story."""

    name: str
    der: bytes
    host: str


# Variants every SDK accepts (with host 127.0.0.1): the starting points of further edits.
ACCEPTED = (
    "genuine 127.0.0.1",
    "SAN two IPs, host second",
    "SAN DNS localhost and IP",
    "BasicConstraints not critical",
    "KeyUsage keyCertSign on a leaf",
    "unknown critical extension",
    "ExtendedKeyUsage serverAuth",
)


def pem(der: bytes, line: int = 64, newline: str = "\n") -> str:
    body = base64.b64encode(der).decode("ascii")
    lines = [body[i : i + line] for i in range(0, len(body), line)]
    return (
        f"-----BEGIN CERTIFICATE-----{newline}"
        + "".join(piece + newline for piece in lines)
        + f"-----END CERTIFICATE-----{newline}"
    )


class Factory:
    """Builds and edits certificates from one seeded issuer key."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.key = ec.derive_private_key(rng.randrange(1, 2**255), ec.SECP256R1())

    def build(
        self,
        *,
        ips: tuple[str, ...] = ("127.0.0.1",),
        ca: bool | None = False,
        path_length: int | None = None,
        critical: bool = True,
        dns: tuple[str, ...] = (),
        subject_key: object = None,
        extra: tuple[x509.ExtensionType, ...] = (),
        extra_critical: bool = False,
    ) -> bytes:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "colossus-fuzz")])
        public = subject_key if subject_key is not None else self.key.public_key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(public)  # type: ignore[arg-type]
            .serial_number(self.rng.randrange(1, 2**159))
            .not_valid_before(NOT_BEFORE)
            .not_valid_after(NOT_AFTER)
        )
        if ca is not None:
            builder = builder.add_extension(x509.BasicConstraints(ca, path_length), critical)
        names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        names += [x509.DNSName(d) for d in dns]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), False)
        for extension in extra:
            builder = builder.add_extension(extension, extra_critical)
        signed = builder.sign(self.key, hashes.SHA256(), ecdsa_deterministic=True)
        return signed.public_bytes(serialization.Encoding.DER)

    def resign(self, tbs: Node, outer_algorithm: bytes = ECDSA_SHA256) -> bytes:
        """A certificate around ``tbs``, signed again by the issuer key."""
        tbs_der = encode(tbs)
        signature = self.key.sign(tbs_der, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        algorithm = tlv(0x30, outer_algorithm)
        return tlv(0x30, tbs_der + algorithm + tlv(0x03, b"\x00" + signature))


def tbs_of(der: bytes) -> Node:
    return decode(der).children[0]


def extensions_of(tbs: Node) -> list[Node]:
    """The Extension SEQUENCEs inside [3] (the list is edited in place)."""
    wrapper = next(c for c in tbs.children if c.tag == 0xA3)
    return wrapper.children[0].children


def extension(oid: bytes, value: bytes, critical: bytes | None = b"\x01\x01\xff") -> Node:
    children = [decode(oid)]
    if critical is not None:
        children.append(decode(critical))
    children.append(Node(0x04, value))
    return Node(0x30, children=children)


def _replace_extension(tbs: Node, oid: bytes, value: bytes, critical: bytes | None) -> None:
    exts = extensions_of(tbs)
    for i, ext in enumerate(exts):
        if encode(ext.children[0]) == oid:
            exts[i] = extension(oid, value, critical)


def variants(factory: Factory) -> Iterator[Cert]:
    """Built certificates and DER edits of the genuine one; each named by what differs."""
    f = factory
    genuine = f.build()
    yield Cert("genuine 127.0.0.1", genuine, "127.0.0.1")
    yield Cert("genuine ::1", f.build(ips=("::1",)), "::1")
    yield Cert("SAN 127.0.0.1 asked for ::1", genuine, "::1")
    yield Cert("SAN ::1 asked for 127.0.0.1", f.build(ips=("::1",)), "127.0.0.1")
    yield Cert("SAN IPv4-mapped ::ffff:127.0.0.1", f.build(ips=("::ffff:127.0.0.1",)), "127.0.0.1")
    yield Cert("SAN ::ffff:0:1 asked for ::1", f.build(ips=("::ffff:0:1",)), "::1")
    yield Cert("SAN 127.0.0.2", f.build(ips=("127.0.0.2",)), "127.0.0.1")
    yield Cert("SAN 0.0.0.0", f.build(ips=("0.0.0.0",)), "127.0.0.1")
    yield Cert("SAN :: asked for ::1", f.build(ips=("::",)), "::1")
    yield Cert("SAN two IPs, host second", f.build(ips=("10.0.0.1", "127.0.0.1")), "127.0.0.1")
    yield Cert("SAN DNS 127.0.0.1 only", f.build(ips=(), dns=("127.0.0.1",)), "127.0.0.1")
    yield Cert("SAN DNS localhost and IP", f.build(dns=("localhost",)), "127.0.0.1")
    yield Cert("no SAN", f.build(ips=()), "127.0.0.1")
    # Around the 16 KiB certificate file cap once in PEM: each IPv6 SAN adds 18 DER bytes.
    for count in (650, 651):
        many = (*(f"fd00::{i:x}" for i in range(count)), "127.0.0.1")
        yield Cert(f"SAN of {count + 1} IPs", f.build(ips=many), "127.0.0.1")
    yield Cert("CA=true", f.build(ca=True), "127.0.0.1")
    yield Cert("CA=true pathlen 0", f.build(ca=True, path_length=0), "127.0.0.1")
    yield Cert("no BasicConstraints", f.build(ca=None), "127.0.0.1")
    yield Cert("BasicConstraints not critical", f.build(critical=False), "127.0.0.1")
    yield Cert("P-384 key", f.build(subject_key=_ec_key(f, ec.SECP384R1())), "127.0.0.1")
    yield Cert("P-521 key", f.build(subject_key=_ec_key(f, ec.SECP521R1())), "127.0.0.1")
    yield Cert("secp256k1 key", f.build(subject_key=_ec_key(f, ec.SECP256K1())), "127.0.0.1")
    yield Cert("brainpoolP256r1 key", f.build(subject_key=_ec_key(f, ec.BrainpoolP256R1())), "127.0.0.1")
    seed = f.rng.randbytes(32)
    yield Cert(
        "Ed25519 key",
        f.build(subject_key=ed25519.Ed25519PrivateKey.from_private_bytes(seed).public_key()),
        "127.0.0.1",
    )
    # Any odd modulus makes an RSA public key, so it can come from the seed.
    modulus = f.rng.getrandbits(2048) | (1 << 2047) | 1
    yield Cert("RSA key", f.build(subject_key=rsa.RSAPublicNumbers(65537, modulus).public_key()), "127.0.0.1")
    yield Cert(
        "KeyUsage keyCertSign on a leaf",
        f.build(extra=(_key_usage(cert_sign=True),), extra_critical=True),
        "127.0.0.1",
    )
    yield Cert(
        "unknown critical extension",
        f.build(
            extra=(x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.55555.1"), b"\x05\x00"),),
            extra_critical=True,
        ),
        "127.0.0.1",
    )
    yield Cert(
        "ExtendedKeyUsage serverAuth",
        f.build(extra=(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),)),
        "127.0.0.1",
    )
    yield Cert(
        "NameConstraints on a leaf",
        f.build(extra=(x509.NameConstraints([x509.DNSName("example")], None),), extra_critical=True),
        "127.0.0.1",
    )
    for name, edit in EDITS:
        tbs = tbs_of(genuine)
        outer = edit(tbs)
        yield Cert(f"DER edit: {name}", f.resign(tbs, outer or ECDSA_SHA256), "127.0.0.1")
    for name, raw in _raw_edits(genuine):
        yield Cert(f"DER bytes: {name}", raw, "127.0.0.1")


def _ec_key(f: Factory, curve: ec.EllipticCurve) -> ec.EllipticCurvePublicKey:
    return ec.derive_private_key(f.rng.randrange(1, 2**160), curve).public_key()


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


Edit = Callable[[Node], "bytes | None"]


def _set_version(value: int | None) -> Edit:
    def edit(tbs: Node) -> None:
        if tbs.children[0].tag == 0xA0:
            tbs.children.pop(0)
        if value is not None:
            tbs.children.insert(0, Node(0xA0, children=[Node(0x02, bytes([value]))]))

    return edit


def _serial(content: bytes) -> Edit:
    def edit(tbs: Node) -> None:
        tbs.children[1] = Node(0x02, content)

    return edit


def _basic(value: bytes, critical: bytes | None = b"\x01\x01\xff") -> Edit:
    def edit(tbs: Node) -> None:
        _replace_extension(tbs, OID_BASIC_CONSTRAINTS, value, critical)

    return edit


def _san(value: bytes) -> Edit:
    def edit(tbs: Node) -> None:
        _replace_extension(tbs, OID_SAN, value, None)

    return edit


def _san_ip(raw: bytes) -> bytes:
    return tlv(0x30, tlv(0x87, raw))


def _duplicate(oid: bytes) -> Edit:
    def edit(tbs: Node) -> None:
        exts = extensions_of(tbs)
        exts.extend([e for e in exts if encode(e.children[0]) == oid])

    return edit


def _add_extension(ext: Node) -> Edit:
    def edit(tbs: Node) -> None:
        extensions_of(tbs).append(ext)

    return edit


def _inner_algorithm(tbs: Node) -> None:
    tbs.children[2] = Node(0x30, children=[decode(ECDSA_SHA384)])


def _outer_algorithm(tbs: Node) -> bytes:
    return ECDSA_SHA384


def _spki_point(mutate: Callable[[bytes], bytes]) -> Edit:
    def edit(tbs: Node) -> None:
        spki = next(
            c
            for c in tbs.children
            if c.tag == 0x30 and c.children and c.children[0].tag == 0x30 and c.children[-1].tag == 0x03
        )
        bits = spki.children[1]
        bits.content = b"\x00" + mutate(bits.content[1:])

    return edit


def _compress(point: bytes) -> bytes:
    x, y = point[1:33], point[33:]
    return bytes([2 + (y[-1] & 1)]) + x


def _names(value: Node) -> Edit:
    def edit(tbs: Node) -> None:
        tbs.children[3] = value
        tbs.children[5] = value

    return edit


def _validity(time: bytes, index: int = 0) -> Edit:
    def edit(tbs: Node) -> None:
        tbs.children[4].children[index] = decode(time)

    return edit


def _extensions_empty(tbs: Node) -> None:
    wrapper = next(c for c in tbs.children if c.tag == 0xA3)
    wrapper.children[0].children.clear()


def _append_to_tbs(extra: Node) -> Edit:
    def edit(tbs: Node) -> None:
        tbs.children.append(extra)

    return edit


def _unique_id(tbs: Node) -> None:
    spki_at = next(i for i, c in enumerate(tbs.children) if c.tag == 0xA3)
    tbs.children.insert(spki_at, Node(0x81, b"\x00\x01"))


def _name(tag: int, value: bytes) -> Node:
    """A Name of one CN attribute whose value has this tag and content."""
    attribute = Node(0x30, children=[decode(bytes.fromhex("0603550403")), Node(tag, value)])
    return Node(0x30, children=[Node(0x31, children=[attribute])])


_UTF8_NAME = Node(
    0x30,
    children=[
        Node(
            0x31,
            children=[
                Node(0x30, children=[decode(bytes.fromhex("0603550403")), Node(0x0C, b"bad\xff\xfeutf8")])
            ],
        )
    ],
)

EDITS: list[tuple[str, Edit]] = [
    ("version v1 with extensions", _set_version(None)),
    ("version v2", _set_version(1)),
    ("version v4", _set_version(3)),
    (
        "version v3 encoded explicitly non-minimal",
        lambda t: t.children.__setitem__(0, Node(0xA0, children=[Node(0x02, b"\x00\x02")])),
    ),
    ("serial zero", _serial(b"\x00")),
    ("serial negative", _serial(b"\xff\x01")),
    ("serial 21 bytes", _serial(b"\x01" * 21)),
    ("serial with a redundant leading zero", _serial(b"\x00\x01")),
    ("serial empty", _serial(b"")),
    ("inner signature algorithm differs from outer", _inner_algorithm),
    ("outer signature algorithm differs from inner", _outer_algorithm),
    ("BasicConstraints CA=false encoded explicitly", _basic(bytes.fromhex("3003010100"))),
    ("BasicConstraints CA=false with pathLen 0", _basic(bytes.fromhex("3003020100"))),
    ("BasicConstraints CA boolean 0x01", _basic(bytes.fromhex("3003010101"))),
    ("BasicConstraints CA=true (DER edit)", _basic(bytes.fromhex("30030101ff"))),
    ("BasicConstraints with trailing bytes in its value", _basic(bytes.fromhex("30000000"))),
    ("BasicConstraints value is not a SEQUENCE", _basic(bytes.fromhex("0500"))),
    ("BasicConstraints critical FALSE encoded explicitly", _basic(bytes.fromhex("3000"), b"\x01\x01\x00")),
    ("BasicConstraints critical boolean 0x01", _basic(bytes.fromhex("3000"), b"\x01\x01\x01")),
    ("BasicConstraints twice", _duplicate(OID_BASIC_CONSTRAINTS)),
    ("SAN twice", _duplicate(OID_SAN)),
    ("SAN IP of 5 bytes", _san(_san_ip(b"\x7f\x00\x00\x01\x00"))),
    ("SAN IP of 8 bytes (127.0.0.1/32)", _san(_san_ip(b"\x7f\x00\x00\x01\xff\xff\xff\xff"))),
    ("SAN IP of 0 bytes", _san(_san_ip(b""))),
    ("SAN IP 16-byte IPv4-mapped 127.0.0.1", _san(_san_ip(b"\x00" * 10 + b"\xff\xff\x7f\x00\x00\x01"))),
    ("SAN IP 16-byte IPv4-compatible ::127.0.0.1", _san(_san_ip(b"\x00" * 12 + b"\x7f\x00\x00\x01"))),
    ("SAN empty sequence", _san(tlv(0x30, b""))),
    ("SAN IP with a non-minimal length", _san(tlv(0x30, b"\x87\x81\x04\x7f\x00\x00\x01"))),
    ("SAN with trailing bytes", _san(_san_ip(b"\x7f\x00\x00\x01") + b"\x00")),
    ("extensions list empty", _extensions_empty),
    (
        "unknown critical extension (DER edit)",
        _add_extension(extension(bytes.fromhex("06032a0304"), b"\x05\x00")),
    ),
    (
        "extension with an OID of non-minimal arcs",
        _add_extension(extension(bytes.fromhex("06042a038001"), b"\x05\x00", None)),
    ),
    ("issuerUniqueID in a v3 certificate", _unique_id),
    ("extra element at the end of tbsCertificate", _append_to_tbs(Node(0x05, b""))),
    (
        "unknown extension holding a non-minimal length",
        _add_extension(extension(bytes.fromhex("06032a0305"), bytes.fromhex("308103020101"), None)),
    ),
    (
        "unknown extension holding indefinite length",
        _add_extension(extension(bytes.fromhex("06032a0306"), bytes.fromhex("30800201010000"), None)),
    ),
    (
        "unknown extension value of two elements",
        _add_extension(extension(bytes.fromhex("06032a0307"), bytes.fromhex("05000500"), None)),
    ),
    ("unknown extension value empty", _add_extension(extension(bytes.fromhex("06032a0308"), b"", None))),
    ("EC point compressed", _spki_point(_compress)),
    ("EC point all zeros", _spki_point(lambda p: b"\x04" + bytes(64))),
    ("EC point with the hybrid prefix 0x06", _spki_point(lambda p: b"\x06" + p[1:])),
    ("EC point not on the curve", _spki_point(lambda p: p[:-1] + bytes([p[-1] ^ 1]))),
    ("EC point at infinity", _spki_point(lambda p: b"\x00")),
    ("EC point truncated", _spki_point(lambda p: p[:-1])),
    ("subject and issuer empty", _names(Node(0x30))),
    ("subject UTF8String with invalid UTF-8", _names(_UTF8_NAME)),
    ("notBefore GeneralizedTime before 2050", _validity(tlv(0x18, b"20260101000000Z"))),
    ("notBefore UTCTime without seconds", _validity(tlv(0x17, b"2601010000Z"))),
    ("notBefore UTCTime with an offset", _validity(tlv(0x17, b"260101000000+0100"))),
    ("notBefore UTCTime with fractional seconds", _validity(tlv(0x17, b"260101000000.5Z"))),
    ("notAfter February 30", _validity(tlv(0x17, b"350230000000Z"), 1)),
    ("notBefore hour 24", _validity(tlv(0x17, b"260101240000Z"))),
    ("notAfter GeneralizedTime year 0", _validity(tlv(0x18, b"00000101000000Z"), 1)),
    ("notAfter February 29 of a leap year", _validity(tlv(0x17, b"320229000000Z"), 1)),
    (
        "DNS SAN with a non-ASCII byte",
        _san(tlv(0x30, tlv(0x87, b"\x7f\x00\x00\x01") + tlv(0x82, b"local\xe9host"))),
    ),
    ("URI SAN besides the IP", _san(tlv(0x30, tlv(0x87, b"\x7f\x00\x00\x01") + tlv(0x86, b"https://x")))),
    ("email SAN besides the IP", _san(tlv(0x30, tlv(0x87, b"\x7f\x00\x00\x01") + tlv(0x81, b"a@x")))),
    ("issuer value tagged UTCTime", _names(_name(0x17, b"colossus-fuzz"))),
    ("subject PrintableString with *", _names(_name(0x13, b"a*b"))),
    ("subject IA5String with a non-ASCII byte", _names(_name(0x16, b"a\xe9b"))),
    ("subject BMPString", _names(_name(0x1E, "ab".encode("utf-16-be")))),
    (
        "KeyUsage with an unused-bits count of 0x54",
        _add_extension(extension(bytes.fromhex("0603551d0f"), bytes.fromhex("03025480"))),
    ),
    (
        "KeyUsage with a set unused bit",
        _add_extension(extension(bytes.fromhex("0603551d0f"), bytes.fromhex("03020781"))),
    ),
    (
        "ExtendedKeyUsage empty",
        _add_extension(extension(bytes.fromhex("0603551d25"), bytes.fromhex("3000"), None)),
    ),
]


def _widen(element: bytes) -> bytes:
    """The same TLV with its length in a non-minimal three-byte long form."""
    node_tag, start, end = read_header(element, 0)
    return bytes([node_tag, 0x83]) + (end - start).to_bytes(3, "big") + element[start:end]


def _raw_edits(genuine: bytes) -> Iterator[tuple[str, bytes]]:
    """Edits of the outer encodings, which re-signing cannot express."""
    _, start, _ = read_header(genuine, 0)
    yield "outer length in three bytes", _widen(genuine)
    yield "outer length indefinite", b"\x30\x80" + genuine[start:] + b"\x00\x00"
    yield "trailing zero byte", genuine + b"\x00"
    yield "truncated by one byte", genuine[:-1]
    tbs_der = encode(tbs_of(genuine))
    rest = genuine[start + len(tbs_der) :]
    yield "tbsCertificate length non-minimal", tlv(0x30, _widen(tbs_der) + rest)


def _primitives(node: Node, path: str) -> Iterator[tuple[str, Node]]:
    if node.constructed:
        for i, child in enumerate(node.children):
            yield from _primitives(child, f"{path}/{i}")
    else:
        yield f"{path}:{node.tag:02x}", node


def random_edit(factory: Factory, der: bytes) -> Cert:
    """One primitive element of the tbsCertificate changed at random, then signed again."""
    rng = factory.rng
    tbs = tbs_of(der)
    path, node = rng.choice(list(_primitives(tbs, "tbs")))
    content = bytearray(node.content)
    action = rng.randrange(5)
    if action == 0 and content:
        at = rng.randrange(len(content))
        content[at] = rng.randrange(256)
        what = f"byte {at} set to {content[at]:02x}"
    elif action == 1 and content:
        at = rng.randrange(len(content))
        del content[at]
        what = f"byte {at} dropped"
    elif action == 2:
        at = rng.randrange(len(content) + 1)
        content.insert(at, rng.choice([0x00, 0x7F, 0x80, 0xFF, 0x2E, 0x20, rng.randrange(256)]))
        what = f"byte {content[at]:02x} inserted at {at}"
    elif action == 3:
        node.tag = rng.choice([0x01, 0x02, 0x04, 0x05, 0x06, 0x0C, 0x13, 0x16, 0x17, 0x18, 0x1E, 0x80, 0x87])
        what = f"tag set to {node.tag:02x}"
    else:
        content = bytearray()
        what = "emptied"
    node.content = bytes(content)
    return Cert(f"DER random: {path} {what}", factory.resign(tbs), "127.0.0.1")
