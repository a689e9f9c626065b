"""The worker manifest: placeholders, list expansion and refusals."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from colossus_conformance.server.manifest import ManifestError, fill, load

SUITE = Path(__file__).resolve().parents[2]


def test_fill_expands_placeholders_and_lists() -> None:
    argv = fill(["{python}", "x={value}", "{extra}", "end"], lists={"extra": ["a", "b"]}, value="1")
    assert argv == [sys.executable, "x=1", "a", "b", "end"]


def test_fill_refuses_an_unknown_placeholder() -> None:
    with pytest.raises(ManifestError, match="unknown placeholder"):
        fill(["{nope}"])


def test_the_reference_manifest_loads_and_builds_its_commands(tmp_path: Path) -> None:
    manifest = load(SUITE / "workers" / "reference.json")
    assert manifest.name == "reference"
    assert manifest.has("kill") and manifest.has("sidecar")
    assert manifest.stop_signal is signal.SIGTERM
    start = manifest.start_argv(tmp_path / "s", tmp_path / "p", {"max_active_runs": "9"})
    assert start[-2:] == ["--limit", "max_active_runs=9"]
    enrol = manifest.enrol_argv(tmp_path / "s", tmp_path / "p", "app", ["runs:read", "runs:execute"], 7)
    assert enrol.count("--scope") == 2 and "7" in enrol and "app" in enrol
    assert manifest.sidecar_argv(3, 4)[-4:] == ["--bootstrap-in-fd", "3", "--bootstrap-out-fd", "4"]


def _write(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "worker.json"
    path.write_text(json.dumps(data))
    return path


BASE = {"worker": "w", "capabilities": [], "daemon": {"start": ["w"], "enrol": ["w"], "scope": ["{scope}"]}}


def test_a_minimal_manifest_has_no_optional_capability(tmp_path: Path) -> None:
    manifest = load(_write(tmp_path, BASE))
    assert not manifest.capabilities and manifest.sidecar == ()


@pytest.mark.parametrize(
    "change",
    [
        {"capabilities": ["teleport"]},
        {"capabilities": ["sidecar"]},  # claimed without a sidecar command
        {"capabilities": ["limits.configurable"]},  # claimed without a limit template
        {"extra": 1},
        {"daemon": {"start": ["w"], "enrol": ["w"]}},
    ],
)
def test_malformed_manifests_are_refused(tmp_path: Path, change: dict[str, object]) -> None:
    with pytest.raises(ManifestError):
        load(_write(tmp_path, {**BASE, **change}))
