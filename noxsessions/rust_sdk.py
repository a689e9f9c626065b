"""Sessions for the Rust SDK (crates/colossus-sdk) and its conformance client
(conformance/clients/rust), one Cargo workspace at the repository root.

    rust_lint       cargo fmt --check, cargo clippy (every target, every feature, warnings
                    are errors), cargo doc with warnings as errors, and `cargo package --list`
                    of the SDK crate checked against the files a user needs
    rust_tests      cargo test over the workspace (unit tests, integration tests against the
                    reference worker installed from ./conformance, doctests), then every
                    program in crates/colossus-sdk/examples against the same worker
    rust_readme     every rust and toml block of crates/colossus-sdk/README.md as a user pastes
                    it: the manifest block and each program become a scratch crate outside the
                    clone (every warning denied), built and run against the reference worker
                    (`dev`, for the daemon blocks) or the embedded runtime
    rust_fresh_deps the workspace copied to a scratch folder, `cargo update` to the newest
                    compatible dependencies, then clippy with warnings as errors (rust_lint does
                    the same on the lock), so a fresh resolve by a user stays warning-free
                    (needs only the crates registry)
    bench_rust_sdk  watch throughput and connect time as ratios over a raw tonic client with
                    the same TLS configuration, memory growth over a long watch (not in the
                    default run)

Builds go to the clone's target folder outside the clone, which starts with the dependency
builds of earlier clones (noxsessions/_cargo.py), and run with --locked --offline after one
`cargo fetch --locked`. Arguments after `--` go to
`cargo test` (rust_tests) or to the benchmark program.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import nox

from noxsessions import _rust_readme
from noxsessions._cargo import OFFLINE, cargo_env, fetch
from noxsessions._lane_facts import CARGO_TARGET, lane
from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "crates/colossus-sdk"

DEFAULT_SESSIONS = ["rust_lint", "rust_tests", "rust_readme", "rust_fresh_deps"]

# What `cargo package` may put in the published crate: its manifest (and cargo's copy of
# the original), the lock file and VCS note cargo adds, docs and licence, the library's
# sources and the examples docs.rs shows. Tests, fixtures, benches and scripts stay home.
PACKAGE_FILES = [
    "Cargo.toml",
    "Cargo.toml.orig",
    "Cargo.lock",
    ".cargo_vcs_info.json",
    "README.md",
    "CHANGELOG.md",
    "LICENSE*",
    "src/*.rs",
    "src/**/*.rs",
    "examples/*.rs",
    "examples/**/*.rs",
]


def _worker(session: nox.Session) -> str:
    """Installs the reference worker into the session and returns its executable."""
    install_local(session, "conformance")
    worker = Path(session.bin) / "colossus-reference-worker"
    if not worker.exists():
        session.error(f"the reference worker was not installed at {worker}")
    return str(worker)


def stray_package_files(listed: list[str]) -> list[str]:
    """The files of `cargo package --list` that no PACKAGE_FILES pattern allows."""
    return [f for f in listed if not any(fnmatch.fnmatchcase(f, p) for p in PACKAGE_FILES)]


@nox.session(venv_backend="none")
@lane(locks=[CARGO_TARGET])
def rust_lint(session: nox.Session) -> None:
    """Formatting, clippy -D warnings, rustdoc -D warnings, and the published file list."""
    env = fetch(session)
    session.run("cargo", "fmt", "--all", "--check", external=True, env=env)
    session.run(
        "cargo", "clippy", "--workspace", "--all-targets", "--all-features", *OFFLINE, "--",
        "-D", "warnings", external=True, env=env,
    )
    session.run(
        "cargo", "clippy", "-p", "colossus-sdk", "--no-default-features", "--all-targets", *OFFLINE, "--",
        "-D", "warnings", external=True, env=env,
    )
    session.run(
        "cargo", "doc", "--workspace", "--no-deps", *OFFLINE, external=True,
        env={**env, "RUSTDOCFLAGS": "-Dwarnings"},
    )
    listed = subprocess.run(
        ["cargo", "package", "-p", "colossus-sdk", "--list", "--allow-dirty", *OFFLINE],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, check=False,
    )
    if listed.returncode != 0:
        session.error(f"cargo package --list failed:\n{listed.stderr}")
    files = listed.stdout.split()
    session.log(f"cargo package lists {len(files)} files")
    stray = stray_package_files(files)
    if stray:
        session.error("the crate would publish files a user does not need: " + ", ".join(stray))
    if "README.md" not in files or not any(f.startswith("src/") for f in files):
        session.error("the crate would publish no README.md or no sources: " + ", ".join(files))


def examples() -> list[str]:
    """The example programs of the SDK crate: examples/NAME.rs and examples/NAME/main.rs."""
    folder = SDK / "examples"
    if not folder.is_dir():
        return []
    names = [p.stem for p in folder.glob("*.rs")]
    names += [p.parent.name for p in folder.glob("*/main.rs")]
    return sorted(names)


@nox.session
@lane(locks=[CARGO_TARGET])
def rust_tests(session: nox.Session) -> None:
    """cargo test (a missing worker fails the integration tests), then every example."""
    env = {
        **fetch(session),
        "COLOSSUS_REFERENCE_WORKER": _worker(session),
        "COLOSSUS_REQUIRE_WORKER": "1",
    }
    # The desktop bridge crate has a session of its own (noxsessions/desktop_bridge.py).
    session.run(
        "cargo", "test", "--workspace", "--exclude", "colossus-desktop-bridge", *OFFLINE, *session.posargs,
        external=True, env=env,
    )
    if session.posargs:
        return
    with _dev_worker(env["COLOSSUS_REFERENCE_WORKER"]) as (daemon, bearer_file):
        for name in examples():
            command = ["cargo", "run", "-p", "colossus-sdk", "--example", name, *OFFLINE]
            if name != "daemon":
                session.run(*command, external=True, env=env)
                continue
            # The daemon example reads its identity from the environment and the bearer
            # from stdin, as an installed application would from its own configuration.
            session.log(" ".join(command) + " < " + str(bearer_file))
            with open(bearer_file, "rb") as stdin:
                subprocess.run(command, cwd=ROOT, env={**os.environ, **env, **daemon}, stdin=stdin, check=True)


@contextlib.contextmanager
def _dev_worker(worker: str, public_api_dir: Path | None = None) -> Iterator[tuple[dict[str, str], Path]]:
    """A shared worker (`colossus-reference-worker dev`) for the daemon example and the
    README's daemon blocks: the example's settings and the file holding the enrolled
    application's bearer. `public_api_dir` defaults to a private temporary folder."""
    with tempfile.TemporaryDirectory(prefix="rust-examples-") as tmp:
        os.chmod(tmp, 0o700)
        folder = public_api_dir or Path(tmp) / "api"
        process = subprocess.Popen(
            [worker, "dev", "--public-api-dir", str(folder), "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        try:
            assert process.stdout is not None
            info = json.loads(process.stdout.readline() or "{}")
            if "instance_id" not in info:
                raise RuntimeError("the reference worker's dev command printed no identity")
            settings = {
                "COLOSSUS_DIR": info["public_api_dir"],
                "COLOSSUS_INSTANCE_ID": info["instance_id"],
                "COLOSSUS_PIN": info["certificate_sha256"],
            }
            yield settings, Path(info["bearer"]["path"])
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


@nox.session
@lane(locks=[CARGO_TARGET])
def rust_readme(session: nox.Session) -> None:
    """The README's blocks as pasted (noxsessions/_rust_readme.py says how each is marked)."""
    found = _rust_readme.blocks((SDK / "README.md").read_text())
    problems = _rust_readme.problems(found)
    if problems:
        session.error("crates/colossus-sdk/README.md:\n  " + "\n  ".join(problems))
    worker = _worker(session)
    env = fetch(session)
    with tempfile.TemporaryDirectory(prefix="rust-readme-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        # What a newcomer runs: the worker's development mode on ~/colossus.
        with _dev_worker(worker, home / "colossus") as (daemon, bearer_file):
            facts = {"instance_id": daemon["COLOSSUS_INSTANCE_ID"], "certificate_sha256": daemon["COLOSSUS_PIN"]}
            crate = Path(tmp) / "app"
            programs = _rust_readme.write_crate(crate, found, SDK, ROOT / "Cargo.lock", facts)
            manifest = str(crate / "Cargo.toml")
            session.run("cargo", "build", "--offline", "--bins", "--manifest-path", manifest, external=True, env=env)
            binaries = Path(env["CARGO_TARGET_DIR"]) / "debug"
            run_env = {
                **os.environ,
                **env,
                "HOME": str(home),
                # The sidecar quick start names the worker as an installed program.
                "PATH": os.pathsep.join([str(Path(worker).parent), os.environ.get("PATH", "")]),
            }
            for block in programs:
                stdin = bearer_file.read_bytes() if block.how == "daemon" else b""
                session.log(f"README line {block.line} ({block.how}): {block.name}")
                result = subprocess.run(
                    [str(binaries / block.name)], cwd=crate, env=run_env, input=stdin,
                    capture_output=True, timeout=180, check=False,
                )
                output = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
                if result.returncode != 0:
                    session.error(f"README line {block.line} failed ({result.returncode}):\n{output[-3000:]}")
                session.log(output.strip()[-500:] or "(no output)")


@nox.session(venv_backend="none")
@lane(locks=[CARGO_TARGET])
def rust_fresh_deps(session: nox.Session) -> None:
    """What a user's fresh resolve builds: the newest compatible dependencies, no warning."""
    env = cargo_env()
    with tempfile.TemporaryDirectory(prefix="rust-fresh-deps-") as tmp:
        copy = Path(tmp)
        shutil.copy2(ROOT / "Cargo.toml", copy / "Cargo.toml")
        shutil.copy2(ROOT / "Cargo.lock", copy / "Cargo.lock")
        # The workspace's members and what their builds read (the SDK's tests read the
        # shared parser vectors); generated folders and caches stay behind.
        ignore = shutil.ignore_patterns("target", ".cache", "node_modules", "__pycache__")
        for part in ["crates", "conformance/clients/rust", "conformance/vectors"]:
            shutil.copytree(ROOT / part, copy / part, ignore=ignore)
        session.run("cargo", "update", "--manifest-path", str(copy / "Cargo.toml"), external=True, env=env)
        session.run(
            "cargo", "clippy", "--manifest-path", str(copy / "Cargo.toml"), "--workspace", "--all-targets",
            "--all-features", "--locked", "--", "-D", "warnings", external=True, env=env,
        )


@nox.session
@lane(locks=[CARGO_TARGET])
def bench_rust_sdk(session: nox.Session) -> None:
    """Prints the Rust SDK's figures as ratios measured in one run (crates/colossus-sdk/README.md).

    The program (crates/colossus-sdk/benches/figures/main.rs, `harness = false`, built with the
    non-default `bench` feature that exposes the hidden `colossus_sdk::__bench`) compares the
    SDK with a raw tonic client over the same pinned TLS 1.3 connector, in alternating rounds:
    watch of a 4,099-event run (>= 0.95; >= 0.93 with the closing GetRun) and connect to
    first call (<= 1.5), each as the median and min-max of 21 rounds (`-- --rounds N`); then
    allocations per event and live-heap growth over a 100,000-event watch (< 5 MiB, as in the other SDKs), beside
    the raw client's.
    """
    env = {**fetch(session), "COLOSSUS_REFERENCE_WORKER": _worker(session)}
    session.run(
        "cargo", "bench", "-p", "colossus-sdk", "--features", "bench", "--bench", "figures", *OFFLINE,
        "--", *session.posargs,
        external=True, env=env,
    )
