"""Loads and checks the case catalogue (``conformance/cases/*.yaml``).

Each YAML file holds one group of cases and must satisfy ``cases/schema.json``.
On top of the schema, the loader checks what a schema cannot express: IDs are
unique across files, step IDs are unique within a case, every step names a
declared connection, and every assertion path starts at a known step or at
the worker's observations.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import sync_points

DEFAULT_TIMEOUT_SECONDS = 20.0


class CatalogueError(Exception):
    """The catalogue is malformed; the message names the file and the case."""


@dataclass(frozen=True)
class Case:
    """One conformance case, as declared in the catalogue."""

    id: str
    group: str
    title: str
    requirements: tuple[str, ...]
    level: str
    worker: str
    timeout_seconds: float
    connections: tuple[dict[str, Any], ...]
    faults: tuple[dict[str, Any], ...]
    steps: tuple[dict[str, Any], ...]
    assertions: tuple[dict[str, Any], ...]
    requires_features: tuple[str, ...] = ()
    source: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def required(self) -> bool:
        return self.level == "REQUIRED"

    @property
    def cross_sdk(self) -> bool:
        """Steps name the SDK role (A, B, C) that runs them; run with two or more clients."""
        return any("sdk" in s for s in self.steps)

    def creates(self) -> int:
        """How many CreateRun calls the case may make (for rate pacing)."""
        return sum(1 for s in self.steps if s["op"] == "create_run")


def load_schema(cases_dir: Path) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((cases_dir / "schema.json").read_text())
    return schema


def load_catalogue(cases_dir: Path) -> list[Case]:
    """Loads every ``*.yaml`` under ``cases_dir``, sorted by file then order."""
    schema = load_schema(cases_dir)
    validator = jsonschema.Draft202012Validator(schema)
    cases: list[Case] = []
    seen: dict[str, str] = {}
    files = sorted(cases_dir.glob("*.yaml"))
    if not files:
        raise CatalogueError(f"no case files in {cases_dir}")
    for path in files:
        for case in load_file(path, validator):
            if case.id in seen:
                raise CatalogueError(f"{path.name}: case {case.id} already defined in {seen[case.id]}")
            seen[case.id] = path.name
            cases.append(case)
    return cases


# libyaml's safe loader when PyYAML has it (ten times faster on the catalogue, same documents).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_file(path: Path, validator: jsonschema.protocols.Validator) -> list[Case]:
    try:
        document = yaml.load(path.read_text(), Loader=_SAFE_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{path.name}: not valid YAML: {exc}") from None
    return parse_document(document, validator, path.name)


def parse_document(document: Any, validator: jsonschema.protocols.Validator, source: str) -> list[Case]:
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "<root>"
        raise CatalogueError(f"{source}: schema violation at {where}: {first.message}")
    group = document["group"]
    cases = []
    for raw in document["cases"]:
        case = Case(
            id=raw["id"],
            group=group,
            title=raw["title"],
            requirements=tuple(raw["requirements"]),
            level=raw["level"],
            worker=raw.get("worker", "daemon"),
            timeout_seconds=float(raw.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)),
            connections=tuple(raw.get("connections", [{"name": "main"}])),
            faults=tuple(raw.get("faults", [])),
            steps=tuple(raw["steps"]),
            assertions=tuple(raw["assert"]),
            requires_features=tuple(raw.get("requires_features", [])),
            source=source,
            raw=raw,
        )
        check_case(case)
        cases.append(case)
    return cases


def check_case(case: Case) -> None:
    """Cross-field checks the JSON schema cannot express."""
    where = f"{case.source}: {case.id}"
    names = [c["name"] for c in case.connections]
    if len(set(names)) != len(names):
        raise CatalogueError(f"{where}: duplicate connection names")
    step_ids: list[str] = []
    for step in case.steps:
        if step["id"] in step_ids:
            raise CatalogueError(f"{where}: duplicate step id {step['id']}")
        step_ids.append(step["id"])
        conn = step.get("args", {}).get("conn", names[0] if names else None)
        if step["op"] not in ("sleep", "sync", "restart_worker") and conn not in names:
            raise CatalogueError(f"{where}: step {step['id']} uses unknown connection {conn!r}")
    try:
        sync_points.check_plan(list(case.steps), case.cross_sdk)
    except sync_points.SyncPlanError as exc:
        raise CatalogueError(f"{where}: {exc}") from None
    for assertion in case.assertions:
        for key in ("path", "equals_path", "not_equals_path"):
            if key in assertion:
                check_path(where, assertion[key], step_ids)
    if case.cross_sdk:
        unnamed = [s["id"] for s in case.steps if s["op"] != "restart_worker" and "sdk" not in s]
        if unnamed:
            raise CatalogueError(f"{where}: a cross-SDK case must name the sdk of every step: {unnamed}")
    if case.required and case.requires_features:
        raise CatalogueError(f"{where}: a REQUIRED case cannot depend on optional client features")


def check_path(where: str, path: str, step_ids: list[str]) -> None:
    head, _, rest = path.partition(".")
    if head in ("worker", "case", "client"):
        return
    if head != "steps":
        raise CatalogueError(f"{where}: assertion path {path!r} must start with steps., worker.")
    step = rest.split(".", 1)[0].split("[", 1)[0]
    if step != "*" and step not in step_ids:
        raise CatalogueError(f"{where}: assertion path {path!r} names unknown step {step!r}")


def select(cases: list[Case], patterns: list[str]) -> list[Case]:
    """Cases whose ID matches any glob pattern (all cases when none given)."""
    if not patterns:
        return list(cases)
    return [c for c in cases if any(match(p, c.id) for p in patterns)]


def match(pattern: str, case_id: str) -> bool:
    """Glob match on case IDs; a pattern without wildcards also matches a prefix group."""
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(case_id, pattern)
    return case_id == pattern or case_id.startswith(pattern + ".")
