"""Structure-aware inputs per vector kind, seeded and deterministic.

Every generator starts from the shared vectors (``conformance/vectors``) and from seeded
certificates, and applies one or two named mutations, so an input's ``how`` says exactly
what differs from a genuine value: that is the reproduction printed for a disagreement.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import certs

VECTORS = Path(__file__).resolve().parents[1] / "vectors"


@dataclass(frozen=True)
class Case:
    kind: str
    how: str
    members: dict[str, str]

    def line(self) -> str:
        return json.dumps({"kind": self.kind, **self.members})


def load_vectors() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(VECTORS.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        out.setdefault(document["kind"], []).extend(document["vectors"])
    return out


# ---- strings ---------------------------------------------------------------------------

HOSTS = [
    "127.0.0.1",
    "[::1]",
    "localhost",
    "LOCALHOST",
    "127.0.0.1.",
    "[::1].",
    "127.1",
    "127.0.1",
    "2130706433",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "127.000.000.001",
    "0127.0.0.1",
    "127.0.0.01",
    "[0:0:0:0:0:0:0:1]",
    "[0:0::1]",
    "[::0:1]",
    "[::01]",
    "[::0001]",
    "[::1%25lo]",
    "[::1%lo]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::127.0.0.1]",
    "::1",
    "[::1",
    "::1]",
    "[[::1]]",
    "[ ::1]",
    "[::1 ]",
    "[::1]]",
    "127.0.0.2",
    "127.255.255.255",
    "0.0.0.0",
    "[::]",
    "10.0.0.1",
    "192.168.0.1",
    "8.8.8.8",
    "[fe80::1]",
    "[::1%eth0]",
    "%31%32%37.0.0.1",
    "127%2e0.0.1",
    "127.0.0.1%00",
    "127\u30020.0.1",
    "\uff11\uff12\uff17.0.0.1",
    "127.0.0.\u0661",
    "[::\uff11]",
    "user@127.0.0.1",
    "user:pw@127.0.0.1",
    "@127.0.0.1",
    "127.0.0.1@127.0.0.1",
    "",
    " 127.0.0.1",
    "127.0.0.1 ",
    "\t127.0.0.1",
    "127.0.0.1\n",
    "[::1]\r",
    "127.0.0.1\x00",
    "[::1]\x00",
]
PORTS = [
    "50051",
    "1",
    "0",
    "65535",
    "65536",
    "99999",
    "100000",
    "050051",
    "00001",
    "+50051",
    "-1",
    "-0",
    " 50051",
    "50051 ",
    "5e4",
    "0x1f",
    "\u0665\u0660\u0660\u0665\u0661",
    "\uff15\uff10\uff10\uff15\uff11",
    "",
    "4294967297",
    "50051.",
    "5_0051",
    "%35%30%30%35%31",
    "50051\n",
    "50051\x00",
]
SCHEMES = [
    "https://",
    "HTTPS://",
    "Https://",
    "http://",
    "https:/",
    "https:",
    "https:///",
    "grpc://",
    "dns:///",
    "ipv4:",
    "unix://",
    "",
    "//",
    " https://",
    "https:\\\\",
    "\ufeffhttps://",
]
SUFFIXES = [
    "",
    "/",
    "/path",
    "?q",
    "#f",
    "?",
    "#",
    "/.",
    "/%2e",
    "\n",
    "\r\n",
    " ",
    "\t",
    "\x00",
    ";x",
    ",",
    ":",
    "\\",
    "/ ",
    "%20",
]

SPECIALS = [
    "\x00",
    "\t",
    "\n",
    "\r",
    " ",
    "\x0b",
    "\x0c",
    "\x1b",
    "\x7f",
    "\x80",
    "\x85",
    "\xa0",
    "\xad",
    "\xe9",
    "\xff",
    "\u0130",
    "\u200b",
    "\u2028",
    "\u2029",
    "\u202e",
    "\ufeff",
    "\uffff",
    "\U0001f600",
    "\ud800",
    "\udfff",
    "\uff21",
    "/",
    "\\",
    '"',
    "'",
    "%",
    "%00",
    "=",
    "-",
    "_",
    ".",
]


def endpoint_strings(rng: random.Random) -> Iterator[tuple[str, str]]:
    """(how, endpoint) pairs: the grid around the two genuine spellings, then random picks."""
    for host in HOSTS:
        yield f"host {host!r}", f"https://{host}:50051"
    for port in PORTS:
        for host in ("127.0.0.1", "[::1]"):
            yield f"host {host} port {port!r}", f"https://{host}:{port}"
    for scheme in SCHEMES:
        yield f"scheme {scheme!r}", f"{scheme}127.0.0.1:50051"
    for suffix in SUFFIXES:
        yield f"suffix {suffix!r}", f"https://[::1]:50051{suffix}"
    yield "no port", "https://127.0.0.1"
    yield "empty port", "https://127.0.0.1:"
    yield "two ports", "https://127.0.0.1:1:2"
    while True:
        scheme, host, port, suffix = (
            rng.choice(SCHEMES[:4]),
            rng.choice(HOSTS),
            rng.choice(PORTS),
            rng.choice(SUFFIXES),
        )
        yield f"{scheme!r} {host!r} {port!r} {suffix!r}", f"{scheme}{host}:{port}{suffix}"


def _around(value: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    """Case changes and special characters at the start, middle and end of a string."""
    yield "upper case", value.upper()
    yield "swapped case", value.swapcase()
    yield "empty", ""
    yield "trailing dot", value + "."
    for ch in rng.sample(SPECIALS, 8):
        where = rng.choice(["start", "middle", "end"])
        at = {"start": 0, "middle": len(value) // 2, "end": len(value)}[where]
        yield f"{ch!r} at the {where}", value[:at] + ch + value[at:]


def bearers(rng: random.Random) -> Iterator[tuple[str, str]]:
    """Every byte class at each length bound, at the start, middle and end."""
    classes = [chr(c) for c in range(0x80)] + [
        "\x80",
        "\xa0",
        "\xff",
        "\u0100",
        "\u2028",
        "\ufeff",
        "\U0001f600",
        "\ud800",
        "\udc00",
    ]
    lengths = [0, 1, 31, 32, 33, 255, 256, 257, 512]
    while True:
        length = rng.choice(lengths)
        ch = rng.choice(classes)
        where = rng.randrange(max(length, 1))
        base = "".join(
            rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
            for _ in range(length)
        )
        value = base[:where] + ch + base[where + 1 :] if length else ch
        yield f"{len(value)} characters, {ch!r} at {where}", value


# ---- JSON documents ----------------------------------------------------------------------

NUMBERS = [
    "1",
    "0",
    "-0",
    "-1",
    "1.0",
    "1e0",
    "1E0",
    "1e3",
    "1E+3",
    "10e-1",
    "0.1e1",
    "01",
    "+1",
    "0x1",
    "1_0",
    "2147483647",
    "2147483648",
    "4294967295",
    "9007199254740993",
    "18446744073709551617",
    "1" + "0" * 400,
    "1e400",
    "-1e400",
    "Infinity",
    "NaN",
    "-",
    "1.",
    ".5",
    "true",
    "null",
    '"1"',
    "[1]",
    "{}",
    "12345",
    "0.0",
    "-0.0",
    "1e-400",
]
SPACES = [" ", "\t", "\n", "\r", "\r\n", "", "\x0b", "\x0c", "\xa0", "\u2028", "\ufeff", "\x00", "  \n\t "]


def dumps(obj: list[tuple[str, str]], sep: str = " ", lead: str = "", trail: str = "") -> str:
    """Serialises members given as (key JSON, value JSON) pairs, keeping duplicates and order."""
    inner = ("," + sep).join(f"{k}:{sep}{v}" for k, v in obj)
    return f"{lead}{{{sep}{inner}{sep}}}{trail}"


def _escape_all(s: str) -> str:
    return '"' + "".join(f"\\u{ord(c):04x}" for c in s) + '"'


def json_mutations(
    members: list[tuple[str, str]], rng: random.Random, fields: dict[str, list[tuple[str, str]]]
) -> Iterator[tuple[str, str]]:
    """(how, text) variants of a JSON object given as (key JSON, value JSON) pairs.

    ``fields`` maps a key to (how, value JSON) alternatives for its value.
    """
    keys = [k for k, _ in members]
    while True:
        choice = rng.randrange(14)
        m = list(members)
        i = rng.randrange(len(m))
        key, value = m[i]
        name = json.loads(key)
        if choice == 0:
            del m[i]
            yield f"drop {name}", dumps(m)
        elif choice == 1:
            m.insert(
                rng.randrange(len(m) + 1),
                (
                    json.dumps(rng.choice(["extra", "Pid", name.upper(), "", name + "\u0000", name + " "])),
                    "1",
                ),
            )
            yield f"add a member near {name}", dumps(m)
        elif choice == 2:
            alternative = rng.choice(fields.get(name, [("null", "null")]))[1]
            m.insert(rng.randrange(len(m) + 1), (key, rng.choice([value, alternative])))
            yield f"duplicate {name}", dumps(m)
        elif choice == 3:
            m[i] = (
                key,
                rng.choice(["null", "true", "1", "1.5", '""', "[]", "{}", '["x"]', json.dumps(value)]),
            )
            yield f"retype {name} to {m[i][1][:20]}", dumps(m)
        elif choice == 4:
            m[i] = (_escape_all(name), value)
            yield f"key {name} fully \\u-escaped", dumps(m)
        elif choice == 5:
            m[i] = (json.dumps(name[:-1] + "\ud800" + name[-1:]), value)
            yield f"key {name} with a lone surrogate escape", dumps(m)
        elif choice == 6 and value.startswith('"'):
            text = json.loads(value)
            m[i] = (
                key,
                rng.choice(
                    [_escape_all(text), value.replace("/", "\\/"), json.dumps(text, ensure_ascii=False)]
                ),
            )
            yield f"value of {name} re-escaped", dumps(m)
        elif choice == 7:
            sep = rng.choice(SPACES)
            yield f"separator {sep!r}", dumps(m, sep=sep)
        elif choice == 8:
            lead, trail = rng.choice(
                [
                    ("\ufeff", ""),
                    ("", "\n"),
                    ("", "\x00"),
                    ("", " "),
                    (" ", ""),
                    ("", ","),
                    ("", "{}"),
                    ("", "\r\n\r\n"),
                    ("\n", ""),
                    ("", "\u2028"),
                ]
            )
            yield f"wrapped in {lead!r} and {trail!r}", dumps(m, lead=lead, trail=trail)
        elif choice == 9 and name in fields:
            how, alternative = rng.choice(fields[name])
            m[i] = (key, alternative)
            yield f"{name}: {how}", dumps(m)
        elif choice == 10:
            rng.shuffle(m)
            yield "members shuffled", dumps(m)
        elif choice == 11:
            m[i] = (json.dumps(rng.choice(keys).swapcase()), value)
            yield f"key {name} case changed", dumps(m)
        elif choice == 12:
            # Two field alternatives at once: which refusal wins decides the error kind.
            for _ in range(2):
                j = rng.randrange(len(m))
                jname = json.loads(m[j][0])
                if jname in fields:
                    how, alternative = rng.choice(fields[jname])
                    m[j] = (m[j][0], alternative)
            yield (
                "two fields changed: " + ", ".join(f"{json.loads(k)}" for k, v in m if (k, v) not in members),
                dumps(m),
            )
        elif choice == 13:
            nested = "[" * 40 + "]" * 40
            m.insert(rng.randrange(len(m) + 1), ('"deep"', nested))
            yield "a deeply nested extra member", dumps(m)


def _pairs(text: str) -> list[tuple[str, str]]:
    obj = json.loads(text)
    return [(json.dumps(k), json.dumps(v)) for k, v in obj.items()]


def _string_alternatives(value: str, rng: random.Random) -> list[tuple[str, str]]:
    return [(how, json.dumps(v)) for how, v in _around(value, rng)]


# ---- per kind ----------------------------------------------------------------------------

Generator = Callable[[random.Random], Iterator[Case]]


def gen_endpoint(rng: random.Random) -> Iterator[Case]:
    for how, value in endpoint_strings(rng):
        yield Case("endpoint", how, {"endpoint": value})


def gen_bearer(rng: random.Random) -> Iterator[Case]:
    for how, value in bearers(rng):
        yield Case("bearer", how, {"bearer": value})


def _endpoint_alternatives(rng: random.Random, n: int) -> list[tuple[str, str]]:
    stream = endpoint_strings(rng)
    return [(f"endpoint {how}", json.dumps(v)) for how, v in (next(stream) for _ in range(n))]


def _number_alternatives() -> list[tuple[str, str]]:
    return [(f"number {n}", n) for n in NUMBERS]


def gen_descriptor(rng: random.Random, vectors: list[dict[str, Any]]) -> Iterator[Case]:
    genuine = [v["text"] for v in vectors if v["expect"] == "accept"]
    base = _pairs(genuine[0])
    obj = dict(json.loads(genuine[0]))
    fields = {
        "endpoint": _endpoint_alternatives(rng, 150),
        "pid": _number_alternatives(),
        "instance_id": [
            *_string_alternatives(obj["instance_id"], rng),
            ("65 chars", json.dumps("a" * 65)),
            ("64 chars", json.dumps("a" * 64)),
        ],
        "api_version": _string_alternatives("v1alpha1", rng),
        "certificate_sha256": _string_alternatives(obj["certificate_sha256"], rng),
    }
    for v in vectors:
        yield Case("descriptor", f"shared vector {v['name']!r}", {"text": v["text"]})
    mutations = json_mutations(base, rng, fields)
    while True:
        how, text = next(mutations)
        if rng.randrange(20) == 0:
            # Around the 4 KiB cap: pad with spaces to exactly 4096 or 4097 bytes.
            target = rng.choice([4096, 4097])
            text = text[:-1] + " " * max(0, target - len(text.encode("utf-8"))) + "}"
            how += f", padded to {target} bytes"
        yield Case("descriptor", how, {"text": text})


def gen_certificate(rng: random.Random, vectors: list[dict[str, Any]]) -> Iterator[Case]:
    for v in vectors:
        yield Case("certificate", f"shared vector {v['name']!r}", {"pem": v["pem"], "host": v["host"]})
    factory = certs.Factory(rng)
    variants = list(certs.variants(factory))
    for c in variants:
        yield Case("certificate", c.name, {"pem": certs.pem(c.der), "host": c.host})
    # Accepted leaves of different lengths, so the base64 ends with 0, 1 or 2 padding signs.
    bases = [c for c in variants if c.name in certs.ACCEPTED]
    while True:
        base = rng.choice(bases)
        if rng.randrange(2):
            edited = certs.random_edit(factory, base.der)
            yield Case(
                "certificate",
                f"{edited.name} of {base.name!r}",
                {"pem": certs.pem(edited.der), "host": "127.0.0.1"},
            )
            continue
        how, text = rng.choice(_pem_mutations(base.der, rng))
        yield Case("certificate", f"PEM of {base.name!r}: {how}", {"pem": text, "host": "127.0.0.1"})


def _armour(head: str, body: str, tail: str) -> str:
    """A PEM block around ``body`` in lines of 64, so only the body's edit differs."""
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([head, *lines, tail]) + "\n"


def _pem_mutations(der: bytes, rng: random.Random) -> list[tuple[str, str]]:
    good = certs.pem(der)
    head, body, tail = good.split("\n", 1)[0], certs.pem(der).split("\n")[1:-2], "-----END CERTIFICATE-----"
    b64 = "".join(body)
    out: list[tuple[str, str]] = []
    for line in (1, 4, 63, 64, 65, 76, 77, 1000):
        out.append((f"lines of {line}", certs.pem(der, line)))
    out.append(("CRLF", certs.pem(der, newline="\r\n")))
    out.append(("CR only", certs.pem(der, newline="\r")))
    out.append(("no final newline", good[:-1]))
    out.append(("two final newlines", good + "\n"))
    out.append(("final CRLF after LF body", good[:-1] + "\r\n"))
    out.append(("mixed CRLF and LF", good.replace("\n", "\r\n", 2)))
    out.append(("header line", good.replace(head + "\n", head + "\nComment: x\n\n")))
    for ch in (" ", "\t", "\x0b", "\x0c", "\x00", "\xa0", "\u2028"):
        at = rng.randrange(1, len(b64) - 1)
        text = _armour(head, b64[:at] + ch + b64[at:], tail)
        out.append((f"{ch!r} inside the base64", text))
        out.append((f"{ch!r} after END", good[:-1] + ch + "\n"))
        out.append((f"{ch!r} before BEGIN", ch + good))
    out.append(("two blocks", good + good))
    out.append(
        ("private key block after", good + "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    )
    out.append(
        (
            "EC PARAMETERS block before",
            "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + good,
        )
    )
    out.append(("junk after", good + "junk\n"))
    out.append(("junk before", "junk\n" + good))
    out.append(("BOM before", "\ufeff" + good))
    out.append(("lower-case END", good.replace("END CERTIFICATE", "end CERTIFICATE")))
    out.append(("four dashes", good.replace("-----BEGIN", "----BEGIN")))
    out.append(("space after BEGIN line", good.replace(head, head + " ")))
    stripped = b64.rstrip("=")
    out.append(("base64 without padding", _armour(head, stripped, tail)))
    out.append(("base64 with an extra =", _armour(head, b64 + "=", tail)))
    out.append(("base64 with === padding", _armour(head, stripped + "===", tail)))
    out.append(("base64url alphabet", _armour(head, b64.replace("+", "-").replace("/", "_"), tail)))
    out.append(("= in the middle", _armour(head, b64[:8] + "=" + b64[8:], tail)))
    out.append(("blank body line", good.replace(head + "\n", head + "\n\n")))
    out.append(("empty body", head + "\n" + tail + "\n"))
    if b64.endswith("="):
        # Non-zero bits in the last character's unused low bits (non-canonical base64).
        last = b64.rstrip("=")
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        bumped = last[:-1] + alphabet[alphabet.index(last[-1]) | 1] + b64[len(last) :]
        out.append(("non-zero padding bits", _armour(head, bumped, tail)))
    return out


def gen_bootstrap(rng: random.Random, vectors: list[dict[str, Any]]) -> Iterator[Case]:
    genuine_text = next(v["text"] for v in vectors if v["expect"] == "accept")
    base = _pairs(genuine_text)
    obj = dict(json.loads(genuine_text))
    for v in vectors:
        yield Case("bootstrap_reply", f"shared vector {v['name']!r}", {"text": v["text"]})
    factory = certs.Factory(rng)
    cert_alternatives: list[tuple[str, str, str]] = []
    for c in certs.variants(factory):
        pin = hashlib.sha256(c.der).hexdigest()
        endpoint = "https://[::1]:50051" if c.host == "::1" else "https://127.0.0.1:50051"
        cert_alternatives.append((c.name, certs.pem(c.der), pin + "\n" + endpoint))
    bearer_stream = bearers(rng)
    fields = {
        "endpoint": _endpoint_alternatives(rng, 150),
        "version": _number_alternatives(),
        "instance_id": _string_alternatives(obj["instance_id"], rng),
        "credential_id": _string_alternatives(obj["credential_id"], rng),
        "api_version": _string_alternatives("v1alpha1", rng),
        "certificate_sha256": _string_alternatives(obj["certificate_sha256"], rng),
        "bearer": [(f"bearer {how}", json.dumps(v)) for how, v in (next(bearer_stream) for _ in range(80))],
        "certificate_pem": [
            (f"PEM: {how}", json.dumps(text))
            for how, text in _pem_mutations(_der_of(obj["certificate_pem"]), rng)
        ],
        "error": [("error object", '{"code": "x", "message": "y"}'), ("error string", '"x"')],
    }
    mutations = json_mutations(base, rng, fields)
    while True:
        if rng.randrange(3) == 0:
            # A certificate variant with its own pin (so the pin check is reached), sometimes
            # with a second fault: which check runs first decides trust against sidecar.
            name, pem, rest = rng.choice(cert_alternatives)
            pin, endpoint = rest.split("\n")
            m = dict(obj, certificate_pem=pem, certificate_sha256=pin, endpoint=endpoint)
            how = f"certificate {name!r} with its own pin"
            extra = rng.randrange(4)
            if extra == 1:
                m["certificate_sha256"] = hashlib.sha256(b"other").hexdigest()
                how += ", then the pin of another certificate"
            elif extra == 2:
                m["bearer"] = next(bearer_stream)[1]
                how += ", and a random bearer"
            elif extra == 3:
                m["certificate_sha256"] = hashlib.sha256(b"other").hexdigest()
                m["bearer"] = "short"
                how += ", the pin of another certificate and a short bearer"
            yield Case("bootstrap_reply", how, {"text": json.dumps(m)})
        else:
            how, text = next(mutations)
            yield Case("bootstrap_reply", how, {"text": text})


def _der_of(pem_text: str) -> bytes:
    import base64

    body = "".join(pem_text.strip().split("\n")[1:-1])
    return base64.b64decode(body)


def generate(seed: int, count: int) -> list[Case]:
    """``count`` inputs spread over the five kinds (shared vectors first), from ``seed``."""
    vectors = load_vectors()
    rng = random.Random(seed)
    streams: dict[str, Iterator[Case]] = {
        "endpoint": gen_endpoint(random.Random(rng.random())),
        "bearer": gen_bearer(random.Random(rng.random())),
        "descriptor": gen_descriptor(random.Random(rng.random()), vectors["descriptor"]),
        "certificate": gen_certificate(random.Random(rng.random()), vectors["certificate"]),
        "bootstrap_reply": gen_bootstrap(random.Random(rng.random()), vectors["bootstrap_reply"]),
    }
    # Shares of the budget: the documents and certificates have the most structure.
    shares = {
        "endpoint": 0.12,
        "bearer": 0.10,
        "descriptor": 0.26,
        "certificate": 0.22,
        "bootstrap_reply": 0.30,
    }
    cases: list[Case] = []
    for kind, stream in streams.items():
        wanted = max(1, int(count * shares[kind]))
        while wanted:
            case = next(stream)
            if kind in ("descriptor", "certificate", "bootstrap_reply") and not _encodable(case):
                continue  # the format's text members are UTF-8: a lone surrogate has no bytes
            cases.append(case)
            wanted -= 1
    return cases


def _encodable(case: Case) -> bool:
    try:
        for value in case.members.values():
            value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
