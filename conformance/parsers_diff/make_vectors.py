"""Adds the certificates behind the fuzzer's findings to the shared vectors (idempotent).

    python -m parsers_diff.make_vectors

Each entry names a variant of ``certs.variants`` and the vector it becomes; a vector whose
name is already in the file is left as it is, so a run never changes a committed verdict.
"""

from __future__ import annotations

import hashlib
import json
import random

from . import certs
from .generate import VECTORS

# (variant name, vector name): every one of them is refused as a trust failure (C2).
CERTIFICATES = [
    ("DER edit: EC point at infinity", "EC key of the point at infinity (it aborted the Node process)"),
    ("DER edit: EC point not on the curve", "EC point not on P-256"),
    ("DER edit: EC point truncated", "EC point one byte short"),
    ("DER edit: EC point compressed", "compressed EC point (only the uncompressed form, stricter reading)"),
    ("DER edit: version v1 with extensions", "version 1 with extensions"),
    ("DER edit: version v2", "version 2"),
    ("DER edit: version v4", "version 4 (an unknown version)"),
    ("DER edit: serial negative", "negative serial number"),
    ("DER edit: serial zero", "serial number zero (RFC 5280 asks for a positive one)"),
    (
        "DER edit: inner signature algorithm differs from outer",
        "tbsCertificate names another signature algorithm",
    ),
    (
        "DER edit: outer signature algorithm differs from inner",
        "outer signature algorithm differs from tbsCertificate's",
    ),
    (
        "DER edit: BasicConstraints CA=false encoded explicitly",
        "BasicConstraints with the DEFAULT CA=false encoded",
    ),
    (
        "DER edit: BasicConstraints CA=false with pathLen 0",
        "BasicConstraints CA=false with a pathLenConstraint",
    ),
    (
        "DER edit: BasicConstraints with trailing bytes in its value",
        "BasicConstraints value with trailing bytes",
    ),
    ("DER edit: BasicConstraints value is not a SEQUENCE", "BasicConstraints value is NULL, not a SEQUENCE"),
    (
        "DER edit: BasicConstraints critical FALSE encoded explicitly",
        "BasicConstraints with the DEFAULT critical=FALSE encoded",
    ),
    ("DER edit: BasicConstraints critical boolean 0x01", "BasicConstraints critical flag 0x01, not DER TRUE"),
    ("DER edit: SAN IP 16-byte IPv4-mapped 127.0.0.1", "IP SAN ::ffff:127.0.0.1 asked for 127.0.0.1"),
    ("SAN IPv4-mapped ::ffff:127.0.0.1", "IP SAN ::ffff:127.0.0.1 (as built) asked for 127.0.0.1"),
    ("DER edit: SAN IP with a non-minimal length", "IP SAN with a non-minimal DER length"),
    ("DER edit: SAN with trailing bytes", "subjectAltName value with trailing bytes"),
    (
        "DER edit: extra element at the end of tbsCertificate",
        "extra element after the extensions in tbsCertificate",
    ),
    ("DER edit: subject UTF8String with invalid UTF-8", "subject UTF8String holding invalid UTF-8"),
    ("DER edit: notBefore UTCTime without seconds", "notBefore UTCTime without seconds"),
    ("DER edit: notBefore UTCTime with an offset", "notBefore UTCTime with a +0100 offset"),
    ("DER edit: notBefore UTCTime with fractional seconds", "notBefore UTCTime with fractional seconds"),
    ("DER edit: notAfter February 30", "notAfter on February 30"),
    ("DER edit: notBefore hour 24", "notBefore at hour 24"),
    ("DER edit: notAfter GeneralizedTime year 0", "notAfter in the year 0"),
    ("DER edit: DNS SAN with a non-ASCII byte", "DNS SAN holding a non-ASCII byte"),
    (
        "DER edit: URI SAN besides the IP",
        "URI SAN besides the IP SAN (only IP and DNS names, stricter reading)",
    ),
    (
        "DER edit: email SAN besides the IP",
        "email SAN besides the IP SAN (only IP and DNS names, stricter reading)",
    ),
    ("DER edit: issuer value tagged UTCTime", "issuer attribute value tagged UTCTime, not a string"),
    ("DER edit: subject PrintableString with *", "subject PrintableString holding * (outside its alphabet)"),
    ("DER edit: subject IA5String with a non-ASCII byte", "subject IA5String holding a non-ASCII byte"),
    (
        "DER edit: subject BMPString",
        "subject BMPString (only UTF8String, PrintableString, IA5String; stricter)",
    ),
    ("DER edit: KeyUsage with an unused-bits count of 0x54", "KeyUsage BIT STRING claiming 84 unused bits"),
    ("DER edit: KeyUsage with a set unused bit", "KeyUsage BIT STRING with a set unused bit"),
    ("DER edit: ExtendedKeyUsage empty", "ExtendedKeyUsage with no purpose"),
    ("NameConstraints on a leaf", "NameConstraints on a leaf (a CA-only extension; stricter reading)"),
]
# Bootstrap replies carrying one of the certificates with its own pin: a refused certificate
# is refused before the pin is compared, so the verdict is sidecar, never trust.
REPLIES = [
    ("DER edit: EC point compressed", "certificate with a compressed EC point and its own pin", "sidecar"),
    (
        "DER edit: BasicConstraints value is not a SEQUENCE",
        "certificate with a NULL BasicConstraints and its own pin",
        "sidecar",
    ),
    (
        "SAN IPv4-mapped ::ffff:127.0.0.1",
        "certificate whose IP SAN is ::ffff:127.0.0.1, with its own pin",
        "sidecar",
    ),
    (
        "SAN of 651 IPs",
        "certificate_pem of a valid leaf, just under the 16 KiB certificate file cap",
        "accept",
    ),
    (
        "SAN of 652 IPs",
        "certificate_pem of a valid leaf, just over the 16 KiB certificate file cap",
        "sidecar",
    ),
]


def _append(file: str, new: list[dict[str, str]]) -> int:
    path = VECTORS / file
    document = json.loads(path.read_text(encoding="utf-8"))
    names = {v["name"] for v in document["vectors"]}
    added = [v for v in new if v["name"] not in names]
    document["vectors"].extend(added)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return len(added)


def _base64_vectors(factory: certs.Factory) -> list[dict[str, str]]:
    """A genuine leaf whose base64 ends in "==" (4 unused bits), and non-canonical armours."""
    # Longer DNS SANs (and new serials and signatures) move the DER length through each remainder.
    leaf = next(der for der in (factory.build(dns=("a" * k,)) for k in range(1, 64)) if len(der) % 3 == 1)
    no_sign = next(der for der in (factory.build(dns=("b" * k,)) for k in range(1, 64)) if len(der) % 3 == 0)
    good = certs.pem(leaf)
    lines = good.split("\n")  # [..., last body line, END line, ""]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = lines[-3]
    lines[-3] = last[:-3] + alphabet[alphabet.index(last[-3]) | 1] + "=="
    assert lines[-3] != last, "the last character already had its low bit set"
    vector = {"host": "127.0.0.1"}
    return [
        {"name": "genuine leaf, canonical base64 ending in ==", **vector, "pem": good, "expect": "accept"},
        {
            "name": "base64 with non-zero unused bits before the padding (non-canonical)",
            **vector,
            "pem": "\n".join(lines),
            "expect": "trust",
        },
        {
            "name": "base64 padded with = after a complete group",
            **vector,
            "pem": certs.pem(no_sign).replace("\n-----END", "=\n-----END"),
            "expect": "trust",
        },
    ]


def main() -> None:
    factory = certs.Factory(random.Random(2026))
    variants = {c.name: c for c in certs.variants(factory)}
    made = [
        {"name": name, "host": variants[key].host, "pem": certs.pem(variants[key].der), "expect": "trust"}
        for key, name in CERTIFICATES
    ]
    made += _base64_vectors(factory)
    genuine = json.loads((VECTORS / "bootstrap-replies.json").read_text(encoding="utf-8"))["vectors"][0]
    replies = []
    for key, name, expect in REPLIES:
        reply = json.loads(genuine["text"])
        reply["certificate_pem"] = certs.pem(variants[key].der)
        reply["certificate_sha256"] = hashlib.sha256(variants[key].der).hexdigest()
        replies.append({"name": name, "text": json.dumps(reply), "expect": expect})
    print(f"certificates.json: {_append('certificates.json', made)} added")
    print(f"bootstrap-replies.json: {_append('bootstrap-replies.json', replies)} added")


if __name__ == "__main__":
    main()
