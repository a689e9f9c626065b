"""Shared helpers for the runner's self-tests."""

import sys
from pathlib import Path

import pytest

from colossus_conformance.catalogue import parse_document
from colossus_conformance.sdks import ClientSpec

HERE = Path(__file__).resolve().parent
SUITE = HERE.parents[1]


@pytest.fixture
def fake_client() -> ClientSpec:
    return ClientSpec(sdk="fake", folder=HERE, command=(sys.executable, str(HERE / "fake_client.py")))


@pytest.fixture
def validator():
    import json

    import jsonschema

    schema = json.loads((SUITE / "cases" / "schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def make_cases(validator, ids, group="selftest", **extra):
    """Worker-less cases whose only step is a sleep, asserting the echo."""
    document = {
        "group": group,
        "description": "runner self-test cases",
        "cases": [
            {
                "id": case_id,
                "title": f"self-test {case_id}",
                "requirements": ["S1"],
                "level": "REQUIRED",
                "worker": "none",
                "timeout_seconds": 3,
                "connections": [],
                "steps": [{"id": "nap", "op": "sleep", "args": {"seconds": 0}}],
                "assert": [{"path": "steps.nap.value.echo.seconds", "equals": 0}],
                **extra,
            }
            for case_id in ids
        ],
    }
    return parse_document(document, validator, "selftest.yaml")
