"""Sessions for the desktop bridge (crates/colossus-desktop-bridge) and its Tauri plugin
(crates/tauri-plugin-colossus, a Cargo workspace of its own so the main one never links GTK).

    bridge_tests        cargo test -p colossus-desktop-bridge: the target manager, the product
                        operations and the canary test, Embedded and Managed Local (against
                        the reference worker, required)
    tauri_plugin_tests  the plugin's mock-runtime tests (capabilities, remote origins, the
                        ordered channel, the command/handler/permission inventory), the
                        generated permission files checked for drift, and the TypeScript
                        guest bindings against @tauri-apps/api/mocks. Needs WebKitGTK and GTK
                        development packages (.ci/run installs them when missing)
    tauri_plugin_e2e    the example app under Xvfb through tauri-driver and WebKitWebDriver
                        (not in the default run)

Formatting, clippy and rustdoc of the bridge crate run in rust_lint with the rest of the
workspace. Arguments after `--` go to `cargo test`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nox

from noxsessions._cargo import OFFLINE, cargo_env, fetch
from noxsessions._lane_facts import CARGO_TARGET, lane
from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "crates/tauri-plugin-colossus"
PLUGIN_MANIFEST = str(PLUGIN / "Cargo.toml")

DEFAULT_SESSIONS = ["bridge_tests", "tauri_plugin_tests"]

# The Debian packages the plugin's build links (tauri always links GTK and WebKitGTK on Linux,
# even for the mock runtime); .ci/run installs them when missing.
SYSTEM_PACKAGES = ["libwebkit2gtk-4.1-dev", "libgtk-3-dev"]


@nox.session
@lane(locks=[CARGO_TARGET])
def bridge_tests(session: nox.Session) -> None:
    """The bridge crate's tests, the Managed Local canary session included."""
    install_local(session, "conformance")
    worker = Path(session.bin) / "colossus-reference-worker"
    if not worker.exists():
        session.error(f"the reference worker was not installed at {worker}")
    env = {**fetch(session), "COLOSSUS_REFERENCE_WORKER": str(worker), "COLOSSUS_REQUIRE_WORKER": "1"}
    session.run(
        "cargo", "test", "-p", "colossus-desktop-bridge", *OFFLINE, *session.posargs,
        external=True, env=env,
    )


def _require_system_packages(session: nox.Session) -> None:
    missing = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}\n", *SYSTEM_PACKAGES],
        capture_output=True, text=True, check=False,
    )
    if missing.returncode != 0 or missing.stdout.count("install ok installed") != len(SYSTEM_PACKAGES):
        session.error(
            "the Tauri plugin links GTK and WebKitGTK: apt-get install "
            + " ".join(SYSTEM_PACKAGES) + " (.ci/run does this)"
        )


@nox.session(venv_backend="none")
@lane(locks=[CARGO_TARGET])
def tauri_plugin_tests(session: nox.Session) -> None:
    """The plugin's mock-runtime tests, permission drift check and guest-binding tests."""
    _require_system_packages(session)
    env = cargo_env()
    session.run("cargo", "fetch", "--locked", "--manifest-path", PLUGIN_MANIFEST, external=True, env=env)
    before = _permission_files()
    session.run(
        "cargo", "test", "--manifest-path", PLUGIN_MANIFEST, *OFFLINE, *session.posargs,
        external=True, env=env,
    )
    # build.rs regenerates the permission files into the source tree; a committed set that
    # differs from what the command list generates is drift.
    after = _permission_files()
    if before != after:
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        session.error("generated permission files drifted (commit them): " + ", ".join(changed))
    guest = PLUGIN / "guest-js"
    if (guest / "package.json").is_file():
        npm = shutil.which("npm")
        if npm is None:
            session.error("npm is needed for the guest-binding tests")
        session.chdir(guest)
        session.run(npm, "ci", "--no-audit", "--no-fund", external=True, silent=True)
        session.run(npm, "test", external=True)


def _permission_files() -> dict[str, bytes]:
    root = PLUGIN / "permissions"
    return {
        str(p.relative_to(PLUGIN)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    } if root.is_dir() else {}


@nox.session(venv_backend="none")
def tauri_plugin_e2e(session: nox.Session) -> None:
    """The example app through tauri-driver and WebKitWebDriver under Xvfb (not default)."""
    _require_system_packages(session)
    script = PLUGIN / "examples/desktop/e2e/run.sh"
    if not script.is_file():
        session.error(f"{script.relative_to(ROOT)} does not exist yet")
    session.run("bash", str(script), external=True, env=cargo_env())
