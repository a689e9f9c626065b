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
from .json_docs import NUMBERS, json_mutations, pairs, string_alternatives
from .strings import bearers, endpoint_strings

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
    base = pairs(genuine[0])
    obj = dict(json.loads(genuine[0]))
    fields = {
        "endpoint": _endpoint_alternatives(rng, 150),
        "pid": _number_alternatives(),
        "instance_id": [
            *string_alternatives(obj["instance_id"], rng),
            ("65 chars", json.dumps("a" * 65)),
            ("64 chars", json.dumps("a" * 64)),
        ],
        "api_version": string_alternatives("v1alpha1", rng),
        "certificate_sha256": string_alternatives(obj["certificate_sha256"], rng),
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
    base = pairs(genuine_text)
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
        "instance_id": string_alternatives(obj["instance_id"], rng),
        "credential_id": string_alternatives(obj["credential_id"], rng),
        "api_version": string_alternatives("v1alpha1", rng),
        "certificate_sha256": string_alternatives(obj["certificate_sha256"], rng),
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
