"""The worker manifest: how the runner starts, enrols, stops and kills a worker under test.

A small JSON file (conformance/docs/worker-protocol.md, "The manifest") names the commands
of the daemon route, the optional sidecar command and the optional capabilities the worker
claims. Commands are argv lists; ``{name}`` placeholders are filled in by the runner, and an
element that is exactly ``{limits}`` or ``{scopes}`` expands into zero or more elements.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

# Capabilities a worker may lack; a case that needs one it lacks is not applicable.
CAPABILITIES = ("sidecar", "restart", "kill", "artifacts", "limits.configurable")

_ARGV = {"type": "array", "items": {"type": "string"}, "minItems": 1}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["worker", "capabilities", "daemon"],
    "additionalProperties": False,
    "properties": {
        "worker": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$"},
        "description": {"type": "string"},
        "capabilities": {"type": "array", "items": {"enum": list(CAPABILITIES)}, "uniqueItems": True},
        "daemon": {
            "type": "object",
            "required": ["start", "enrol", "scope"],
            "additionalProperties": False,
            "properties": {
                "start": _ARGV,
                "enrol": _ARGV,
                "scope": _ARGV,
                "limit": _ARGV,
                "stop_signal": {"enum": ["SIGTERM", "SIGINT"]},
                "kill_signal": {"enum": ["SIGKILL"]},
            },
        },
        "sidecar": {
            "type": "object",
            "required": ["command"],
            "additionalProperties": False,
            "properties": {"command": _ARGV},
        },
    },
}


class ManifestError(Exception):
    """The manifest is missing, malformed or inconsistent."""


@dataclass(frozen=True)
class WorkerManifest:
    """One worker under test, as its manifest describes it."""

    name: str
    path: Path
    capabilities: frozenset[str]
    start: tuple[str, ...]
    enrol: tuple[str, ...]
    scope: tuple[str, ...]
    limit: tuple[str, ...]
    stop_signal: signal.Signals
    kill_signal: signal.Signals
    sidecar: tuple[str, ...]

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    def start_argv(self, state_dir: Path, public_api_dir: Path, limits: Mapping[str, str]) -> list[str]:
        extra = [a for n, v in sorted(limits.items()) for a in fill(self.limit, name=n, value=v)]
        return fill(self.start, lists={"limits": extra}, **self._folders(state_dir, public_api_dir))

    def enrol_argv(
        self, state_dir: Path, public_api_dir: Path, application: str, scopes: Sequence[str], bearer_fd: int
    ) -> list[str]:
        extra = [a for s in scopes for a in fill(self.scope, scope=s)]
        return fill(
            self.enrol,
            lists={"scopes": extra},
            application=application,
            bearer_fd=str(bearer_fd),
            **self._folders(state_dir, public_api_dir),
        )

    def sidecar_argv(self, in_fd: int, out_fd: int) -> list[str]:
        return fill(self.sidecar, in_fd=str(in_fd), out_fd=str(out_fd))

    @staticmethod
    def _folders(state_dir: Path, public_api_dir: Path) -> dict[str, str]:
        return {"state_dir": str(state_dir), "public_api_dir": str(public_api_dir)}


def fill(template: Sequence[str], lists: Mapping[str, list[str]] | None = None, **values: str) -> list[str]:
    """Expands one argv template: ``{name}`` inside elements, ``{list}`` elements into lists."""
    out: list[str] = []
    for element in template:
        key = element[1:-1] if element.startswith("{") and element.endswith("}") else ""
        if lists is not None and key in lists:
            out += lists[key]
            continue
        out.append(element.replace("{python}", sys.executable).format_map(_Strict(values)))
    return out


class _Strict(dict[str, str]):
    def __missing__(self, key: str) -> str:
        raise ManifestError(f"unknown placeholder {{{key}}} in a manifest command")


def load(path: Path) -> WorkerManifest:
    """Reads and checks a manifest; relative paths in it stay as written."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(data, SCHEMA)
    except (OSError, ValueError, jsonschema.ValidationError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    daemon = data["daemon"]
    capabilities = frozenset(data["capabilities"])
    if "sidecar" in capabilities and "sidecar" not in data:
        raise ManifestError(f"{path}: claims the sidecar capability but names no sidecar command")
    if "limits.configurable" in capabilities and "limit" not in daemon:
        raise ManifestError(f"{path}: claims limits.configurable but names no limit template")
    return WorkerManifest(
        name=data["worker"],
        path=path,
        capabilities=capabilities,
        start=tuple(daemon["start"]),
        enrol=tuple(daemon["enrol"]),
        scope=tuple(daemon["scope"]),
        limit=tuple(daemon.get("limit", ())),
        stop_signal=signal.Signals[daemon.get("stop_signal", "SIGTERM")],
        kill_signal=signal.Signals[daemon.get("kill_signal", "SIGKILL")],
        sidecar=tuple(data.get("sidecar", {}).get("command", ())),
    )
