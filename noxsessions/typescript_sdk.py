"""Sessions for the TypeScript SDK (sdk/typescript).

    typescript_lint      tsc --strict (SDK, tests, examples), typescript-eslint strict-type-checked,
                         the ESM + CommonJS build by `npm pack`, then publint,
                         @arethetypeswrong/cli and the file list, all on the packed tarball
    typescript_package   the package as a user installs it: from the packed tarball and from a
                         checkout (`npm install <folder>`, built by `prepare`), imported and
                         required, `instanceof` across the ESM and CommonJS copies, and every
                         README code block run as pasted against the reference worker
    typescript_tests     node:test unit tests (scripted in-process gRPC worker, TLS policy,
                         shared parser vectors) and integration tests against the reference
                         worker, installed from ./conformance, over real TLS
    typescript_examples  runs every program in sdk/typescript/examples against the reference worker
    bench_typescript_sdk watch throughput and connect time as ratios over a raw connect-node
                         client, RSS growth over a long watch (not in the default run)

Arguments after `--` go to `node --test` (tests, examples) or to the benchmark.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import nox

from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk/typescript"

DEFAULT_SESSIONS = ["typescript_lint", "typescript_tests", "typescript_examples", "typescript_package"]

# What `npm pack` may contain: the bundles, their declarations and maps, docs, licence.
PACKAGE_FILES = {
    "LICENSE",
    "README.md",
    "package.json",
    "dist/index.js",
    "dist/index.js.map",
    "dist/index.cjs",
    "dist/index.cjs.map",
    "dist/index.d.ts",
    "dist/index.d.cts",
    "dist/testing.js",
    "dist/testing.js.map",
    "dist/testing.cjs",
    "dist/testing.cjs.map",
    "dist/testing.d.ts",
    "dist/testing.d.cts",
}


LOCK_MARKER = "node_modules/.colossus-lock-sha256"


def _npm_ci(session: nox.Session) -> None:
    """`npm ci` from the lock file, skipped when node_modules was installed from this very lock.

    The conformance client's build (conformance/clients/typescript/build.mjs) uses the same
    marker, so a session and a conformance run never reinstall under each other's feet.
    """
    digest = hashlib.sha256((SDK / "package-lock.json").read_bytes()).hexdigest()
    marker = SDK / LOCK_MARKER
    if marker.is_file() and marker.read_text() == digest:
        session.log("node_modules matches package-lock.json; npm ci skipped")
        return
    session.run("npm", "ci", "--no-audit", "--no-fund", external=True)
    marker.write_text(digest)


def _with_worker(session: nox.Session) -> dict[str, str]:
    """Installs the reference worker into the session; a missing worker must fail the tests."""
    install_local(session, "conformance")
    worker = Path(session.bin) / "colossus-reference-worker"
    return {"COLOSSUS_REQUIRE_WORKER": "1", "COLOSSUS_REFERENCE_WORKER": str(worker)}


def _built_with_worker(session: nox.Session) -> dict[str, str]:
    """The worker installed, node_modules current and the SDK, tests and bench compiled to build/."""
    env = _with_worker(session)
    session.chdir(SDK)
    _npm_ci(session)
    session.run("npx", "--no-install", "tsc", "-p", "tsconfig.test.json", external=True)
    return env


@nox.session(venv_backend="none")
def typescript_lint(session: nox.Session) -> None:
    """Type checks, lint, the dual build and the package checks."""
    tmp = _tmp(session)
    session.chdir(SDK)
    _npm_ci(session)
    session.run("npx", "--no-install", "tsc", "--noEmit", "-p", "tsconfig.json", external=True)
    session.run("npx", "--no-install", "tsc", "--noEmit", "-p", "tsconfig.test.json", external=True)
    session.run("npx", "--no-install", "eslint", "--max-warnings", "0", ".", external=True)
    tarball, files = _pack(session, tmp)
    session.run("npx", "--no-install", "publint", "run", "--strict", str(tarball), external=True)
    session.run("npx", "--no-install", "attw", str(tarball), "--profile", "node16", external=True)
    unexpected, missing = files - PACKAGE_FILES, PACKAGE_FILES - files
    if unexpected or missing:
        session.error(f"npm pack contents are wrong: unexpected {sorted(unexpected)}, missing {sorted(missing)}")
    session.log(f"npm pack lists exactly {len(files)} files")


def _tmp(session: nox.Session) -> Path:
    """The session's temporary folder as an absolute path (made before any chdir)."""
    return Path(session.create_tmp()).resolve()


def _pack(session: nox.Session, out: Path) -> tuple[Path, set[str]]:
    """`npm pack` into `out` (its `prepare` script builds dist/ first)."""
    for old in out.glob("colossus-sdk-*.tgz"):
        old.unlink()
    listing = session.run("npm", "pack", "--json", "--pack-destination", str(out), external=True, silent=True)
    # nox mixes the build's stderr into the output; npm's JSON starts on a line of its own.
    text = str(listing)
    start = re.search(r"^\[$", text, re.MULTILINE)
    if start is None:
        session.error(f"npm pack printed no JSON listing:\n{text}")
    entry = json.loads(text[start.start() :])[0]
    tarball = out / entry["filename"]
    session.log(f"{tarball.name}: {tarball.stat().st_size} bytes packed, {entry['unpackedSize']} unpacked")
    return tarball, {f["path"] for f in entry["files"]}


@nox.session
def typescript_package(session: nox.Session) -> None:
    """Installs the packed tarball and a checkout into apps of their own and runs them."""
    tmp = _tmp(session)
    env = _with_worker(session)
    session.chdir(SDK)
    _npm_ci(session)
    tarball, _ = _pack(session, tmp)
    env["COLOSSUS_SDK_TARBALL"] = str(tarball)
    session.run("node", "--test", "test/package/package.test.mjs", *session.posargs, external=True, env=env)


@nox.session
def typescript_tests(session: nox.Session) -> None:
    """Unit tests, then integration tests against the reference worker."""
    env = _built_with_worker(session)
    tests = sorted(str(p.relative_to(SDK)) for p in (SDK / "build/test").glob("*.test.js"))
    # strict: a rejection nobody handles fails its test file even where a hook is installed.
    node = ["node", "--unhandled-rejections=strict", "--test", "--test-concurrency=1"]
    session.run(*node, *tests, *session.posargs, external=True, env=env)


@nox.session
def typescript_examples(session: nox.Session) -> None:
    """Each example is a program; they start or enrol the reference worker themselves."""
    env = _built_with_worker(session)
    session.run("node", "--test", "build/test/examples.run.js", *session.posargs, external=True, env=env)


@nox.session
def bench_typescript_sdk(session: nox.Session) -> None:
    """Prints the SDK's figures as ratios measured in one run (see sdk/typescript/README.md)."""
    env = _built_with_worker(session)
    session.run("node", "--expose-gc", "build/bench/bench.js", *session.posargs, external=True, env=env)
