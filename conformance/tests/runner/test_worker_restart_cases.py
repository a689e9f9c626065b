"""The worker-restart cases judge reports the way they should (no worker needed).

Each test feeds the real catalogue case a report shaped like one SDK behaviour: a client
that checks the pin and TLS policy on every new connection passes; one that skips the
checks on a reconnect (the call goes through to the wrong listener, or fails with a plain
transport error) fails, and so does one that gives up before its elapsed-time budget.
"""

import pytest

from colossus_conformance import catalogue
from colossus_conformance.judging import judge

from .conftest import SUITE

HELLO = {
    "features": ["credential_calls"],
    "retry_budget": {"read_attempts": 5, "watch_attempts": 5, "watch_elapsed_seconds": 30.0},
}
TRUST = {"kind": "trust", "grpc_code": None, "reason": "PIN_MISMATCH", "sdk_type": "PinMismatchError"}
TRANSPORT = {"kind": "transport", "grpc_code": "UNAVAILABLE", "reason": None, "sdk_type": "TransportError"}


@pytest.fixture(scope="module")
def cases():
    return {c.id: c for c in catalogue.load_catalogue(SUITE / "cases") if c.group == "worker-restart"}


def event(sequence, kind="output_delta", **extra):
    return {"run_id": "run_1", "sequence": sequence, "kind": kind, **extra}


def held_client_report(g):
    return {
        "steps": [
            {"id": "c", "op": "connect", "value": {}, "credential_calls": 1},
            {"id": "x", "op": "create_run", "value": {"run": {"run_id": "run_1"}}, "credential_calls": 0},
            {"id": "s", "op": "sync", "value": {}},
            {"id": "restart", "op": "restart_worker", "value": {"down_seconds": 0.0}},
            {"id": "g", "op": "get_run", **g},
            {"id": "f", "op": "connect", "error": TRUST, "credential_calls": 0},
        ]
    }


def rpc_calls(**extra):
    return {"rpc_calls": {"SystemService/GetServerInfo": 1, "RunService/CreateRun": 1, **extra}}


def test_a_held_client_that_rechecks_trust_passes(cases):
    report = held_client_report({"error": TRUST, "credential_calls": 0})
    assert (
        judge(cases["worker-restart.held-client-meets-foreign-leaf"], report, rpc_calls(), [], "", HELLO)
        == []
    )


def test_a_held_client_that_skips_the_checks_on_reconnect_fails(cases):
    report = held_client_report({"value": {"run": {"run_id": "run_1"}}, "credential_calls": 0})
    failures = judge(
        cases["worker-restart.held-client-meets-tls12"],
        report,
        rpc_calls(**{"RunService/GetRun": 1}),
        [],
        "",
        HELLO,
    )
    assert any(f.startswith("steps.g.error.kind") for f in failures)
    assert any(f.startswith("worker.rpc_calls.RunService/GetRun") for f in failures)


def test_a_reconnect_refused_with_a_plain_transport_error_fails(cases):
    report = held_client_report({"error": TRANSPORT, "credential_calls": 0})
    failures = judge(
        cases["worker-restart.held-client-meets-foreign-leaf"], report, rpc_calls(), [], "", HELLO
    )
    assert any(f.startswith("steps.g.error.kind") for f in failures)
    assert any(f.startswith("steps.g.error.sdk_type") for f in failures)


def test_a_reconnect_that_asks_for_the_bearer_first_fails(cases):
    report = held_client_report({"error": TRUST, "credential_calls": 1})
    failures = judge(
        cases["worker-restart.held-client-meets-foreign-leaf"], report, rpc_calls(), [], "", HELLO
    )
    assert any("credential provider was called" in f for f in failures)


def budget_report(down_seconds, error):
    events = [event(1, "status_changed"), event(2, text="one"), event(3, text="two")]
    return {
        "steps": [
            {"id": "c", "op": "create_run", "value": {"run": {"run_id": "run_1"}}, "credential_calls": 1},
            {
                "id": "w",
                "op": "watch",
                "value": {"events": events, "completed": False, "reconnects": 2},
                "error": error,
                "credential_calls": 0,
                "credential_calls_after_sync": 0,
            },
            {"id": "down", "op": "restart_worker", "value": {"down_seconds": down_seconds}},
        ]
    }


def test_a_watch_that_waits_out_its_budget_passes(cases):
    case = cases["worker-restart.down-past-the-watch-budget"]
    assert judge(case, budget_report(30.4, TRANSPORT), {}, [], "", HELLO) == []


def test_a_watch_that_gives_up_before_its_budget_fails(cases):
    case = cases["worker-restart.down-past-the-watch-budget"]
    failures = judge(case, budget_report(1.6, TRANSPORT), {}, [], "", HELLO)
    assert [f for f in failures if f.startswith("steps.down.value.down_seconds")]
