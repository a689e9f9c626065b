"""Seeded edits of the JSON documents the SDKs parse (descriptor, bootstrap reply): member
order, spacing, escapes, duplicates, numbers and wrong types, each named by what it changes."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from .strings import around

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


def pairs(text: str) -> list[tuple[str, str]]:
    obj = json.loads(text)
    return [(json.dumps(k), json.dumps(v)) for k, v in obj.items()]


def string_alternatives(value: str, rng: random.Random) -> list[tuple[str, str]]:
    return [(how, json.dumps(v)) for how, v in around(value, rng)]
