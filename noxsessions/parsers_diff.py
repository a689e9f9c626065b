"""Differential fuzzing of the four SDKs' trust parsers (conformance/parsers_diff).

    parsers_diff  lint of the driver, then one seeded batch of generated descriptors,
                  endpoints, certificates, bearers and bootstrap replies through the Python,
                  TypeScript, Go and Rust parsers; fails on any input whose verdicts differ (accept
                  against a refusal, or two kinds of refusal) or that crashes a parser

Arguments after `--` go to the driver, for a longer run: `-- --count 50000 --seed 7`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import nox

from noxsessions._cargo import OFFLINE, fetch
from noxsessions.go_sdk import GO_ENV
from noxsessions.go_sdk import SDK as GO_SDK
from noxsessions.python_sdk import _install
from noxsessions.typescript_sdk import SDK as TS_SDK
from noxsessions.typescript_sdk import _npm_ci

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "conformance"

# Seeded and bounded (20,000 inputs in about 6 s, about 20 s with the builds), so it is steady.
DEFAULT_SESSIONS = ["parsers_diff"]


@nox.session
def parsers_diff(session: nox.Session) -> None:
    """Builds the four verdict programs and compares their verdicts on one batch."""
    # The Python SDK as a user gets it, with its pinned stack (cryptography, ruff, mypy).
    _install(session, worker=False)
    with session.chdir(CONFORMANCE):
        session.run("ruff", "check", "parsers_diff")
        session.run("ruff", "format", "--check", "parsers_diff")
        session.run("mypy", "--strict", "parsers_diff")
    tmp = Path(session.create_tmp()).resolve()
    go_program = tmp / "go-verdicts.test"
    with session.chdir(GO_SDK):
        session.run("go", "test", "-c", "-o", str(go_program), ".", external=True, env=GO_ENV)
    # Only the verdict program and what it imports, compiled outside the package's build/.
    build = tmp / "typescript"
    shutil.rmtree(build, ignore_errors=True)
    with session.chdir(TS_SDK):
        _npm_ci(session)
        session.run(
            "npx", "--no-install", "tsc", "-p", "test/parsers-diff.tsconfig.json", "--outDir", str(build),
            external=True,
        )
    (build / "package.json").write_text('{"type": "module"}\n')
    (build / "node_modules").symlink_to(TS_SDK / "node_modules")
    rust_program = _rust_verdict_program(session)
    with session.chdir(CONFORMANCE):
        session.run(
            "python", "-m", "parsers_diff", "--go", str(go_program), "--rust", rust_program,
            "--node-script", str(build / "test/parsers-diff-verdict.js"), *session.posargs,
        )


def _rust_verdict_program(session: nox.Session) -> str:
    """The Rust SDK's unit-test binary (its verdict program, like Go's test binary), built
    into the cargo cache outside the clone; returns its path."""
    env = fetch(session)
    session.run(
        "cargo", "test", "-p", "colossus-sdk", "--lib", "--no-run", *OFFLINE, external=True, env=env
    )
    # Asked again for the path only: everything is built, so this is quick and quiet.
    listing = subprocess.run(
        ["cargo", "test", "-p", "colossus-sdk", "--lib", "--no-run", *OFFLINE, "--message-format=json"],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, check=True,
    ).stdout
    for line in listing.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable") and message[
            "target"
        ]["kind"] == ["lib"]:
            return str(message["executable"])
    session.error("cargo did not report the colossus-sdk unit-test binary")
    raise AssertionError("unreachable")
