"""The verdict of one case: its assertions and the suite-wide rules, over what came back.

The client reports; it never judges. A case passes when every assertion holds over the
client's step reports and the worker's observations, the client reported nothing fatal, a
step refused by a trust check never asked for the bearer, and no bearer appears in the
report (C5).
"""

from __future__ import annotations

import json
from typing import Any

from . import assertions
from .bearer_leaks import contains_secret
from .case_preparation import substitute
from .catalogue import Case


def credential_rule(result: dict[str, Any], hello: dict[str, Any]) -> list[str]:
    """Suite-wide C5 rule: a step refused by a trust check never asked for the bearer.

    Applies to clients that report ``credential_calls`` (docs/client-protocol.md).
    """
    if "credential_calls" not in hello.get("features", []):
        return []
    failures = []
    for step in result.get("steps", []):
        error = step.get("error") or {}
        # A step with a sync point was healthy before it; only calls after the release
        # can belong to the connection the trust check refused.
        counted = (
            "credential_calls_after_sync" if "credential_calls_after_sync" in step else "credential_calls"
        )
        if error.get("kind") == "trust" and step.get(counted, 0) != 0:
            failures.append(
                f"steps.{step['id']}: refused by a trust check, yet the credential provider was "
                f"called {step[counted]} time(s) (C5: the bearer is loaded last)"
            )
    return failures


def judge(
    case: Case,
    result: dict[str, Any],
    observations: dict[str, Any],
    bearers: list[str],
    nonce: str = "",
    hello: dict[str, Any] | None = None,
) -> list[str]:
    """Every failed check of one case, as text; empty means the case passed."""
    failures: list[str] = []
    document = {
        "steps": {s["id"]: s for s in result.get("steps", [])},
        "worker": assertions.derive_worker_fields(observations),
        "case": {"id": case.id, "level": case.level},
        "client": hello or {},
    }
    if result.get("fatal"):
        failures.append(f"client reported a fatal problem: {result['fatal']}")
    failures.extend(credential_rule(result, hello or {}))
    for assertion in case.assertions:
        outcome = assertions.evaluate(substitute(assertion, nonce), document)
        if not outcome.ok:
            failures.append(outcome.description)
    # Suite-wide rule (C5): no bearer may appear in anything the client reports,
    # including error messages.
    text = json.dumps(result)
    if contains_secret(text, bearers):
        failures.append("a bearer appeared in the client's report (error text or values)")
    return failures
