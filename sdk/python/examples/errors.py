"""Typed errors: branch on the class, ``code`` and ``reason``, never on the message."""

from __future__ import annotations

import colossus_agent_client as colossus
from _worker import worker_executable


def create_exactly_once(client: colossus.Client, text: str) -> colossus.CreateRunResult:
    """The safe retry pattern: the SDK never repeats a create on its own; the caller may,
    with the same key, so a retry can never make a second run.

    ``rate_limit_retries`` lets the SDK wait out the worker's create rate limit (the
    advertised refill time) and try again with the same key; an unknown outcome is
    retried here, also with the same key.
    """
    key: str | None = None
    for _ in range(3):
        try:
            return client.runs.create(text, idempotency_key=key, rate_limit_retries=5)
        except colossus.OutcomeUnknownError as error:
            key = error.idempotency_key  # repeat with the same key: no duplicate run
    raise RuntimeError("the worker stayed unreachable; retry later with the same key")


def burst(client: colossus.Client, count: int) -> list[str]:
    """More creates than the per-application burst allows: each still succeeds, once."""
    return [create_exactly_once(client, f"task {i}").run.run_id for i in range(count)]


def main() -> None:
    options = colossus.SidecarOptions(executable=worker_executable(), application_id="errors-demo")
    with colossus.Client.start_sidecar(options) as client:
        first = create_exactly_once(client, "hello")
        print(f"created {first.run.run_id}")
        # The reference worker allows a burst of 4 creates per application, then 1/s.
        print(f"burst of 6 created {len(set(burst(client, 6)))} distinct runs")

        try:
            client.runs.get("run_does_not_exist")
        except colossus.NotFoundError as error:
            print(
                f"not found: code={error.code.name if error.code else None} reason={error.reason}"
            )

        try:
            client.runs.create("something else", idempotency_key=first.idempotency_key)
        except colossus.IdempotencyConflictError as error:
            print(f"conflict on key {error.idempotency_key}: reason={error.reason}")

        try:
            client.runs.create("x", max_turns=1000)
        except colossus.InvalidArgumentError as error:
            # Refused locally against the worker's advertised limits: code is None.
            print(f"refused locally: reason={error.reason} field={error.metadata.get('field')}")

        try:
            client.runs.create(
                "continue",
                mode=colossus.RunMode.PLAN,
                plan_action=colossus.PlanAction("run_x", 1, colossus.PlanActionKind.REVISE),
            )
        except colossus.CapabilityMissingError as error:
            print(f"capability missing: {error.metadata.get('capability')}")
        except colossus.ApiError as error:
            print(f"worker refused the plan action: reason={error.reason}")


if __name__ == "__main__":
    main()
