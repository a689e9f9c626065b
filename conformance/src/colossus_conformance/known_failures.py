"""Per-SDK lists of cases expected to fail, each with a reason.

A list lives at ``conformance/known_failures/<sdk>.yaml``::

    sdk: python
    entries:
      - pattern: pin-checks.c4.tls12-server
        reason: grpcio cannot require TLS 1.3 (tracked in ...)

Rules, all enforced by the runner:

- a failing case that matches an entry is reported as an expected failure;
- a listed case that passes is an error (the list must shrink with the bugs);
- a pattern that matches no case of the catalogue is an error (it is stale or
  misspelled), even when the current selection does not include it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .catalogue import match
from .results import FAIL, PASS, XFAIL, XPASS, CaseResult

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["sdk", "entries"],
    "additionalProperties": False,
    "properties": {
        "sdk": {"type": "string"},
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["pattern", "reason"],
                "additionalProperties": False,
                "properties": {
                    "pattern": {"type": "string", "minLength": 1},
                    "reason": {"type": "string", "minLength": 10},
                },
            },
        },
    },
}


class KnownFailuresError(Exception):
    """The list is malformed."""


@dataclass(frozen=True)
class Entry:
    pattern: str
    reason: str


def load(path: Path, sdk: str) -> list[Entry]:
    """Loads the list for ``sdk``; a missing file means an empty list."""
    if not path.exists():
        return []
    document = yaml.safe_load(path.read_text()) or {}
    return parse(document, sdk, path.name)


def parse(document: Any, sdk: str, source: str = "<memory>") -> list[Entry]:
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(document))
    if errors:
        raise KnownFailuresError(f"{source}: {errors[0].message}")
    if document["sdk"] != sdk:
        raise KnownFailuresError(f"{source}: lists failures for {document['sdk']!r}, not {sdk!r}")
    return [Entry(e["pattern"], e["reason"]) for e in document["entries"]]


def entry_for(entries: list[Entry], case_id: str) -> Entry | None:
    """The first entry whose pattern matches ``case_id``."""
    for entry in entries:
        if match(entry.pattern, case_id):
            return entry
    return None


def dangling(entries: list[Entry], all_case_ids: list[str]) -> list[Entry]:
    """Entries whose pattern matches no case in the whole catalogue."""
    return [e for e in entries if not any(match(e.pattern, c) for c in all_case_ids)]


def reconcile(result: CaseResult, entries: list[Entry]) -> CaseResult:
    """The result as the list sees it: a listed failure is expected, a listed pass an error."""
    entry = entry_for(entries, result.case_id)
    if entry is None:
        return result
    if result.status == PASS:
        result.status = XPASS
        result.reason = f"listed as a known failure ({entry.reason}) but passed: remove it from the list"
    elif result.status == FAIL:
        result.status = XFAIL
        result.reason = entry.reason
    return result
