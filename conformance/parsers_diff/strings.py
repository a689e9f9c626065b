"""Seeded endpoint and bearer strings: genuine values, hostile spellings and edits of both."""

from __future__ import annotations

import random
from collections.abc import Iterator

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


def around(value: str, rng: random.Random) -> Iterator[tuple[str, str]]:
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
