"""The release: every package built into dist/, installed from its artifact, and run.

    release          builds every artifact into the git-ignored dist/ and checks it the way
                     its registry would, installs each from the artifact alone by running
                     its README's "Install from a release build" block as pasted, in a
                     scratch project outside the clone (noxsessions/_install_blocks.py),
                     and runs a live TLS + authentication round trip (connect, create,
                     watch to the end) per SDK, the Rust crate's included, against a
                     reference worker started with `colossus-reference-worker dev` (plus
                     the Rust program dev prints, run as pasted); then prints every
                     artifact with its size and each round trip's output
    release_dry_run  the same builds and checks, installs and round trips, without
                     `cargo package`'s own verification build (the round trip compiles the
                     packaged crate in debug, reusing the Rust sessions' target folder's
                     dependencies), and accepting uncommitted changes (what CI runs on
                     every change)

The artifacts:

    dist/python/   sdist and wheel (`python -m build`), `twine check --strict`
    dist/npm/      the `npm pack` tarball, after the package's build and its own package
                   checks (`npm run check:package`: publint, attw)
    dist/go/       a module proxy folder (MODULE/@v/VERSION.zip, .mod, .info, list) whose zip
                   is made and checked by golang.org/x/mod/zip, the proxy's own rules
    dist/rust/     `cargo package` of crates/colossus-sdk, once that crate exists

Every step fails the session loudly; nothing is skipped except the Rust crate (its package
and round trip) while crates/colossus-sdk/Cargo.toml is not committed (said in the log).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import nox

from noxsessions._cargo import OFFLINE, fetch
from noxsessions._install_blocks import run_block
from noxsessions._lane_facts import CARGO_TARGET, PYTHON_SDK_TREE, lane
from noxsessions._wheels import build_sdist_and_wheel, install_local
from noxsessions.typescript_sdk import _npm_ci

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
HERE = Path(__file__).resolve().parent / "_release"
PY_SDK = ROOT / "sdk/python"
TS_SDK = ROOT / "sdk/typescript"
GO_SDK = ROOT / "sdk/go"
GO_MODULE = "github.com/obscuritylabs/colossus-sdks/sdk/go"
RUST_CRATE = ROOT / "crates/colossus-sdk"

DEFAULT_SESSIONS = ["release_dry_run"]


@nox.session
@lane(locks=[PYTHON_SDK_TREE, CARGO_TARGET])
def release(session: nox.Session) -> None:
    """Build, check, install from the artifact and run every SDK; the Rust crate verified."""
    _release(session, dry_run=False)


@nox.session
@lane(locks=[PYTHON_SDK_TREE, CARGO_TARGET])
def release_dry_run(session: nox.Session) -> None:
    """The release on a working tree: uncommitted changes allowed, no cargo package verify."""
    _release(session, dry_run=True)


def _release(session: nox.Session, *, dry_run: bool) -> None:
    shutil.rmtree(DIST, ignore_errors=True)
    DIST.mkdir()
    artifacts = [
        *_python_artifacts(session, DIST / "python"),
        *_npm_artifact(session, DIST / "npm"),
        *_go_artifact(session, DIST / "go"),
    ]
    crate = _rust_artifact(session, DIST / "rust", dry_run=dry_run)
    tmp = Path(session.create_tmp()).resolve() / "release"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    # Each SDK installed by its README's "Install from a release build" block, as pasted,
    # in a scratch project outside the clone (nothing above it can lend a package.json, a
    # go.mod or a Cargo workspace).
    scratch = Path(tempfile.mkdtemp(prefix="colossus-release-")).resolve()
    try:
        runners = [
            _python_from_wheel(session, scratch / "python"),
            _typescript_from_tarball(session, scratch / "npm"),
            _go_from_proxy(session, scratch / "go"),
        ]
        if crate:
            runners.append(_rust_from_crate(session, scratch / "rust"))
        for name, output in _round_trips(session, tmp, runners):
            session.log(f"round trip, {name}:\n{output.rstrip()}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _log_sizes(session, [*artifacts, *crate])


def _log_sizes(session: nox.Session, artifacts: list[Path]) -> None:
    for path in artifacts:
        session.log(f"artifact {path.stat().st_size:>10,} bytes  {path.relative_to(ROOT)}")


# --- building -------------------------------------------------------------------------


def _python_artifacts(session: nox.Session, out: Path) -> list[Path]:
    session.install("-r", str(PY_SDK / "requirements-release.txt"))
    build_sdist_and_wheel(session, PY_SDK, out)
    found = sorted(out.glob("*"))
    wheels = [p for p in found if p.suffix == ".whl"]
    sdists = [p for p in found if p.name.endswith(".tar.gz")]
    if len(wheels) != 1 or len(sdists) != 1:
        session.error(f"expected one wheel and one sdist in {out}, found {[p.name for p in found]}")
    session.run("twine", "check", "--strict", *map(str, found))
    _same_package_files(session, wheels[0], sdists[0])
    return found


def _same_package_files(session: nox.Session, wheel: Path, sdist: Path) -> None:
    """The sdist carries every module the wheel installs (a user building from it gets the same)."""
    with zipfile.ZipFile(wheel) as z:
        in_wheel = {n for n in z.namelist() if ".dist-info/" not in n}
    with tarfile.open(sdist) as t:
        in_sdist = {m.name.split("/src/", 1)[1] for m in t.getmembers() if "/src/" in m.name and m.isfile()}
    missing = sorted(in_wheel - in_sdist)
    if missing:
        session.error(f"the sdist lacks files the wheel installs: {missing[:10]}")
    session.log(f"{wheel.name}: {len(in_wheel)} files, all in {sdist.name}")


def _npm_artifact(session: nox.Session, out: Path) -> list[Path]:
    out.mkdir(parents=True)
    scripts = json.loads((TS_SDK / "package.json").read_text()).get("scripts", {})
    with session.chdir(TS_SDK):
        _npm_ci(session)
        session.run("npm", "run", "build", external=True)
        if "check:package" in scripts:  # the package's own publint + attw
            session.run("npm", "run", "check:package", external=True)
        session.run("npm", "pack", "--pack-destination", str(out), external=True)
    found = sorted(out.glob("*.tgz"))
    if len(found) != 1:
        session.error(f"expected one npm tarball in {out}, found {[p.name for p in found]}")
    return found


def go_version() -> str:
    """The module version to release: `v` + the Version constant of sdk/go/version.go."""
    match = re.search(r'const Version = "([^"]+)"', (GO_SDK / "version.go").read_text())
    if match is None:
        raise RuntimeError("sdk/go/version.go has no `const Version = \"...\"`")
    return "v" + match.group(1)


def _go_artifact(session: nox.Session, out: Path) -> list[Path]:
    env = {"GOFLAGS": "-mod=readonly"}
    with session.chdir(GO_SDK):
        # Every dependency in the module cache matches go.sum, as a user's build will check.
        session.run("go", "mod", "verify", external=True, env=env)
    with session.chdir(HERE / "gomodzip"):
        session.run("go", "run", ".", "-dir", str(GO_SDK), "-module", GO_MODULE,
                    "-version", go_version(), "-out", str(out), external=True, env=env)
    return sorted(p for p in out.rglob("*") if p.is_file())


def _rust_artifact(session: nox.Session, out: Path, *, dry_run: bool) -> list[Path]:
    manifest = RUST_CRATE / "Cargo.toml"
    # Committed, as on a clean clone: a crate still being written in this checkout is not
    # part of a release yet.
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", str(manifest)], cwd=ROOT,
                             capture_output=True, check=False).returncode == 0
    if not tracked:
        session.log(f"{manifest.relative_to(ROOT)} is not committed yet: no Rust crate to package")
        return []
    package = tomllib.loads(manifest.read_text())["package"]
    env = fetch(session)  # the Rust sessions' target folder, dependencies fetched
    # The dry run neither compiles the packaged crate (rust_tests builds the same sources)
    # nor insists on a committed tree.
    flags = ["--allow-dirty", "--no-verify"] if dry_run else []
    session.run("cargo", "package", "--manifest-path", str(manifest), *OFFLINE, *flags,
                external=True, env=env)
    crate = Path(env["CARGO_TARGET_DIR"]) / "package" / f"{package['name']}-{package['version']}.crate"
    if not crate.is_file():
        session.error(f"cargo package did not write {crate}")
    out.mkdir(parents=True)
    shutil.copy2(crate, out / crate.name)
    return [out / crate.name]


# --- installing from the artifacts ------------------------------------------------------

# A runner: (name, argv before the four connection arguments, cwd, env).
Runner = tuple[str, list[str], Path, dict[str, str]]


def _python_from_wheel(session: nox.Session, where: Path) -> Runner:
    """sdk/python/README.md's install block: a venv with the wheel, as pasted."""
    run_block(session, "python", where, DIST, env={})
    python = str(where / ".venv" / "bin" / "python")
    session.run(python, "-m", "pip", "check", external=True)
    shutil.copy2(HERE / "roundtrip" / "roundtrip.py", where / "roundtrip.py")
    # -I: the SDK must come from the venv, never from this checkout.
    return ("python", [python, "-I", str(where / "roundtrip.py")], where, {})


def _typescript_from_tarball(session: nox.Session, where: Path) -> Runner:
    """sdk/typescript/README.md's install block: `npm install` of the tarball, as pasted."""
    run_block(session, "typescript", where, DIST, env={"npm_config_audit": "false", "npm_config_fund": "false"})
    shutil.copy2(HERE / "roundtrip" / "roundtrip.mjs", where / "roundtrip.mjs")
    return ("typescript", ["node", "roundtrip.mjs"], where, {})


def _go_from_proxy(session: nox.Session, where: Path) -> Runner:
    """sdk/go/README.md's install block: `go get` through dist/go as GOPROXY, as pasted."""
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    env = {
        # What the block's `$(go env GOPROXY)` extends: the dependencies from the machine's
        # module cache when it has them, else from the public proxy. A private module cache,
        # so the release's zip is what gets extracted, never an older copy of the same version.
        "GOPROXY": f"file://{cache}/cache/download,https://proxy.golang.org",
        # A new path on every run: the go command indexes module cache folders by path and
        # version, so a reused path would serve an earlier release's file list.
        "GOMODCACHE": tempfile.mkdtemp(prefix="modcache-", dir=where.parent),
        "GOFLAGS": "-modcacherw",
        # The block sets GONOSUMDB itself; nothing here may do it for it.
        "GONOSUMDB": "",
        "GOPRIVATE": "",
    }
    # After the block, in its shell: the round trip, the release's own version checked.
    # -trimpath: the private module cache above has a new path on every run, and without it
    # the build cache keys each dependency on its folder and compiles them all again.
    then = f"""cp {HERE / "roundtrip" / "go" / "main.go"} main.go
go mod tidy
test "$(go list -m -f '{{{{.Version}}}}' {GO_MODULE})" = {go_version()}
go build -trimpath -o roundtrip .
"""
    run_block(session, "go", where, DIST, env=env, then=then)
    return ("go", [str(where / "roundtrip")], where, {})


def _rust_from_crate(session: nox.Session, where: Path) -> Runner:
    """crates/colossus-sdk/README.md's install block: a package on the unpacked .crate."""
    # Offline, from the dependencies rust_tests and `cargo package` fetched; the clone's
    # target folder keeps them compiled, so only the crate itself and the app are built.
    env = {**fetch(session), "CARGO_NET_OFFLINE": "true"}
    then = f"""cp {HERE / "roundtrip" / "rust" / "main.rs"} src/main.rs
cargo build --offline --quiet
"""
    run_block(session, "rust", where, DIST, env=env, then=then)
    app = Path(env["CARGO_TARGET_DIR"]) / "debug" / "app"
    return ("rust", [str(app)], where / "app", {})


# --- the round trips --------------------------------------------------------------------


def _round_trips(session: nox.Session, tmp: Path, runners: list[Runner]) -> list[tuple[str, str]]:
    install_local(session, "conformance")
    worker = Path(session.bin) / "colossus-reference-worker"
    public = tmp / "dev"
    public.mkdir(mode=0o700)
    log = tmp / "dev.log"
    with open(log, "wb") as stderr:
        dev = subprocess.Popen([str(worker), "dev", "--public-api-dir", str(public), "--json"],
                               stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
    try:
        facts = _first_json_line(session, dev, log)
        if facts["bearer"].get("delivery") != "file":
            session.error(f"dev did not keep the bearer in its file: {facts['bearer']}")
        connection = [facts["public_api_dir"], facts["instance_id"], facts["certificate_sha256"],
                      facts["bearer"]["path"]]
        session.log(f"dev serves {facts['endpoint']} as {facts['instance_id']}")
        bearer = Path(facts["bearer"]["path"]).read_text().strip()
        outputs = []
        for name, argv, cwd, env in runners:
            result = subprocess.run([*argv, *connection], cwd=cwd, env={**os.environ, **env},
                                    capture_output=True, text=True, timeout=180)
            shown = result.stdout + result.stderr
            if bearer in shown:
                session.error(f"the {name} round trip printed the bearer")
            if result.returncode != 0 or "terminated SUCCEEDED" not in result.stdout \
                    or "round trip from the" not in result.stdout:
                session.error(f"the {name} round trip failed (exit {result.returncode}):\n{shown}")
            outputs.append((name, result.stdout))
        rust = [cwd for name, _, cwd, _ in runners if name == "rust"]
        if rust:
            outputs.append(("rust, the snippet dev prints", _rust_dev_snippet(session, facts, rust[0], bearer)))
    finally:
        dev.send_signal(signal.SIGTERM)
        try:
            dev.wait(20)
        except subprocess.TimeoutExpired:
            dev.kill()
            dev.wait()
    if dev.returncode != 0:
        session.error(f"dev exited with {dev.returncode}:\n{log.read_text()[-3000:]}")
    return outputs


def _rust_dev_snippet(session: nox.Session, facts: dict[str, Any], package: Path, bearer: str) -> str:
    """The Rust program `dev` prints for these facts, built in the release's Rust package
    (as src/bin/dev.rs) and run as pasted: the Python, TypeScript and Go snippets have
    their own tests (sdk/*/README tests), this one is checked here, where the crate is."""
    code = (
        "import json, sys\n"
        "from colossus_reference_worker.commands.snippets import Connection, snippets\n"
        "f = json.loads(sys.argv[1])\n"
        "print(snippets(Connection(public_api_dir=f['public_api_dir'], instance_id=f['instance_id'],"
        " certificate_sha256=f['certificate_sha256'], application_id=f['application_id'],"
        " keyring_service=None, bearer_file=f['bearer']['path'])), end='')\n"
    )
    banner = session.run("python", "-c", code, json.dumps(facts), silent=True)
    assert isinstance(banner, str)
    program = banner.split("--- Rust", 1)[1].split("---\n", 1)[1]
    (package / "src" / "bin").mkdir(parents=True, exist_ok=True)
    (package / "src" / "bin" / "dev.rs").write_text(program)
    env = {**os.environ, **fetch(session), "CARGO_NET_OFFLINE": "true"}
    subprocess.run(["cargo", "build", "--offline", "--quiet", "--bin", "dev"], cwd=package, env=env, check=True)
    binary = Path(env["CARGO_TARGET_DIR"]) / "debug" / "dev"
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, check=False)
    shown = result.stdout + result.stderr
    if bearer in shown:
        session.error("the Rust snippet dev prints printed the bearer")
    if result.returncode != 0 or not result.stdout.rstrip().endswith(" terminal"):
        session.error(f"the Rust snippet dev prints failed (exit {result.returncode}):\n{program}\n{shown}")
    return result.stdout


def _first_json_line(session: nox.Session, proc: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout=90):
            session.error(f"dev printed nothing within 90 s:\n{log.read_text()[-3000:]}")
    line = proc.stdout.readline()
    if not line:
        session.error(f"dev exited with {proc.wait()}:\n{log.read_text()[-3000:]}")
    return dict(json.loads(line))
