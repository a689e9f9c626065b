"""Path resolution and every check of the assertion engine."""

import pytest

from colossus_conformance.assertions import MISSING, derive_worker_fields, evaluate, resolve

DOC = {
    "steps": {
        "w": {
            "value": {
                "events": [{"sequence": 1, "kind": "status_changed"}, {"sequence": 2, "kind": "terminated"}]
            },
            "error": {"kind": "watch_gap"},
        },
        "c": {"value": {"run": {"run_id": "r1"}}},
        "d": {"value": {"run": {"run_id": "r1"}}},
    },
    "client": {"retry_budget": {"read_attempts": 1, "watch_attempts": 5}},
    "worker": derive_worker_fields(
        {
            "connections": [
                {"rpcs": ["SystemService/GetServerInfo", "RunService/WatchRun"], "handshake_completed": True}
            ],
            "rpc_calls": {"RunService/WatchRun": 1},
            "bearer_seen": False,
        }
    ),
}


def test_resolve_paths():
    assert resolve(DOC, "steps.w.value.events[*].sequence") == [1, 2]
    assert resolve(DOC, "steps.w.value.events[-1].kind") == "terminated"
    assert resolve(DOC, "steps.w.value.events[5]") is MISSING
    assert resolve(DOC, "steps.x.value") is MISSING
    assert resolve(DOC, "steps.*.error.kind") == ["watch_gap"]
    assert resolve(DOC, "steps.*.value.run.run_id") == ["r1", "r1"]
    assert resolve(DOC, "worker.all_rpcs") == ["SystemService/GetServerInfo", "RunService/WatchRun"]


@pytest.mark.parametrize(
    "assertion, ok",
    [
        ({"path": "steps.w.error.kind", "equals": "watch_gap"}, True),
        ({"path": "steps.w.error.kind", "in": ["trust", "watch_gap"]}, True),
        ({"path": "steps.w.error.kind", "not_equals": "watch_gap"}, False),
        ({"path": "steps.c.error", "exists": False}, True),
        ({"path": "steps.w.error", "exists": False}, False),
        ({"path": "steps.w.value.events[*].sequence", "consecutive_from": 1}, True),
        ({"path": "steps.w.value.events[*].sequence", "consecutive_from": 2}, False),
        ({"path": "steps.w.value.events", "length": 2}, True),
        ({"path": "steps.w.value.events", "min_length": 3}, False),
        ({"path": "steps.w.value.events[*].kind", "contains": "terminated"}, True),
        ({"path": "steps.w.value.events[*].kind", "not_contains": "terminated"}, False),
        ({"path": "steps.c.value.run.run_id", "equals_path": "steps.d.value.run.run_id"}, True),
        ({"path": "steps.c.value.run.run_id", "not_equals_path": "steps.d.value.run.run_id"}, False),
        ({"path": "steps.c.value.run.run_id", "matches": "r[0-9]+"}, True),
        ({"path": "worker.rpc_calls.RunService/WatchRun", "equals": 1}, True),
        ({"path": "worker.rpc_calls.RunService/CreateRun", "equals": 0}, True),
        ({"path": "worker.bearer_seen", "equals": False}, True),
        ({"path": "worker.bearer_seen", "equals": 0}, False),
        ({"path": "worker.connection_count", "at_most": 1, "at_least": 1}, True),
        ({"path": "steps.w.value.events[*].sequence", "unique": True}, True),
        ({"path": "steps.w.value.missing", "equals": None}, False),
        ({"path": "steps.w.value.events[*].sequence", "starts_with": [1]}, True),
        ({"path": "steps.w.value.events[*].sequence", "starts_with": [2]}, False),
        ({"path": "steps.w.value.events[*].sequence", "starts_with": [1, 2, 3]}, False),
        ({"path": "steps.w.value.events[*].sequence", "consecutive_after": 0}, True),
        ({"path": "steps.w.value.events[*].sequence", "consecutive_after": 1}, False),
        ({"path": "steps.w.value.events[*].sequence", "consecutive_after": "$c.run.run_id"}, False),
        ({"path": "steps.w.value.events", "length": "$client.retry_budget.watch_attempts"}, False),
        (
            {"path": "worker.rpc_calls.RunService/WatchRun", "equals": "$client.retry_budget.read_attempts"},
            True,
        ),
    ],
)
def test_checks(assertion, ok):
    assert evaluate(assertion, DOC).ok is ok


def test_failure_text_names_path_and_reason():
    outcome = evaluate({"path": "steps.w.error.kind", "equals": "trust", "why": "C4"}, DOC)
    assert not outcome.ok
    assert "steps.w.error.kind" in outcome.description and "C4" in outcome.description
