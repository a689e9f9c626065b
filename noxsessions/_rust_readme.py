"""The Rust SDK README's code blocks, as a user pastes them (rust_readme, noxsessions/rust_sdk.py).

Every ```rust and ```toml block of crates/colossus-sdk/README.md is preceded by a marker that
says how it is checked:

    <!-- readme-test: manifest -->   the `[dependencies]` a user adds: the scratch crate's own
                                     (the repository path made absolute)
    <!-- readme-test: run -->        a program on its own (the reference worker on PATH)
    <!-- readme-test: daemon -->     a program for a running worker: the values a user copies
                                     from enrolment ("wkr_...", "8cf2...7e3c") are filled in,
                                     HOME holds ~/colossus and the bearer is piped to stdin
    <!-- readme-test: dev -->        the same values filled in; the program reads the bearer
                                     from ~/colossus/dev-app.bearer, where `dev` keeps it

A block without a marker, with an unknown one, or with a rustdoc-hidden line (`# ...`, which
a repository or registry page shows literally) is refused. The programs become the binaries
of one scratch crate outside the clone, built with every warning denied, then each is run.
This module holds the I/O-free part: finding and checking the blocks, writing the crate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

BLOCK = re.compile(
    r"(?:<!-- readme-test: (?P<how>[^>]*?) -->\n)?```(?P<lang>rust(?:,[\w-]+)*|toml)\n(?P<code>.*?)```",
    re.S,
)
HOWS = {"toml": {"manifest"}, "rust": {"run", "daemon", "dev"}}
# What a user copies from enrolment (or from dev's banner) into the daemon and dev programs.
INSTANCE_PLACEHOLDER = '"wkr_..."'
PIN_PLACEHOLDER = '"8cf2...7e3c"'
# The README's dependency on the crate, as a user inside this repository writes it.
SDK_PATH_LINE = re.compile(r'path = "crates/colossus-sdk"')


@dataclass(frozen=True)
class Block:
    line: int
    lang: str
    how: str
    code: str

    @property
    def name(self) -> str:
        """The binary's name: the block's line in the README."""
        return f"readme_line_{self.line}"


def blocks(text: str) -> list[Block]:
    """Every rust and toml block of `text`, with its marker (empty when it has none)."""
    return [
        Block(
            line=text.count("\n", 0, m.start("code")) + 1,
            lang=m.group("lang").split(",")[0],
            how=(m.group("how") or "").strip(),
            code=m.group("code"),
        )
        for m in BLOCK.finditer(text)
    ]


def hidden_lines(code: str) -> list[str]:
    """Lines rustdoc would hide (`# ...` or a lone `#`): shown literally outside rustdoc."""
    return [line for line in code.splitlines() if line.strip() == "#" or line.lstrip().startswith("# ")]


def problems(found: list[Block]) -> list[str]:
    """What keeps the blocks from being checked as pasted; empty when nothing does."""
    out = []
    for b in found:
        if b.how not in HOWS[b.lang]:
            out.append(f"line {b.line}: a {b.lang} block needs a marker <!-- readme-test: "
                       f"{' | '.join(sorted(HOWS[b.lang]))} --> (it has {b.how!r})")
        if b.lang == "rust":
            for line in hidden_lines(b.code):
                out.append(f"line {b.line}: a rustdoc-hidden line shows literally on GitHub and "
                           f"crates.io: {line.strip()!r}")
            if "fn main" not in b.code:
                out.append(f"line {b.line}: a program block needs its own fn main")
        if b.how in {"daemon", "dev"} and (INSTANCE_PLACEHOLDER not in b.code or PIN_PLACEHOLDER not in b.code):
            out.append(f"line {b.line}: a {b.how} block copies {INSTANCE_PLACEHOLDER} and {PIN_PLACEHOLDER}")
    manifests = [b for b in found if b.how == "manifest"]
    if len(manifests) != 1:
        out.append(f"the README needs exactly one manifest block, not {len(manifests)}")
    elif not SDK_PATH_LINE.search(manifests[0].code):
        out.append('the manifest block names no path = "crates/colossus-sdk"')
    if not any(b.lang == "rust" for b in found):
        out.append("the README has no rust block")
    return out


def write_crate(folder: Path, found: list[Block], sdk: Path, lock: Path, facts: dict[str, str]) -> list[Block]:
    """Writes the scratch crate (one binary per program block, `facts` filled in) into
    `folder`; returns the program blocks, in README order."""
    manifest = next(b for b in found if b.how == "manifest")
    programs = [b for b in found if b.lang == "rust"]
    dependencies = SDK_PATH_LINE.sub(f'path = "{sdk}"', manifest.code)
    (folder / "src" / "bin").mkdir(parents=True)
    (folder / "Cargo.toml").write_text(
        "[package]\n"
        'name = "colossus-sdk-readme"\n'
        'version = "0.0.0"\n'
        'edition = "2024"\n'
        "publish = false\n\n"
        "# A workspace of its own, outside the clone: the README's dependencies and nothing else.\n"
        "[workspace]\n\n"
        "[lints.rust]\n"
        'warnings = "deny"\n\n'
        f"{dependencies}"
    )
    # The repository's lock, so the blocks build on the versions the SDK is tested with
    # (cargo keeps the entries it needs and drops the others, offline).
    (folder / "Cargo.lock").write_bytes(lock.read_bytes())
    for b in programs:
        code = b.code
        if b.how in {"daemon", "dev"}:
            code = code.replace(INSTANCE_PLACEHOLDER, f'"{facts["instance_id"]}"')
            code = code.replace(PIN_PLACEHOLDER, f'"{facts["certificate_sha256"]}"')
        (folder / "src" / "bin" / f"{b.name}.rs").write_text(code)
    return programs
