"""Appends check only a run's creation record and tail (W12), counted, not timed.

The journal counts every record whose hash it checks. Answering a question and
recording runtime progress must check as many records at event 4,000 as at
event 10: the count, not the clock, shows that no history is replayed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from test_engine import _engine

from colossus_reference_worker._gen.colossus.api.v1alpha1 import (
    CreateRunRequest,
    InputPart,
    PromptAnswer,
    RespondInteractionRequest,
)
from colossus_reference_worker.credentials import Grant, Principal
from colossus_reference_worker.engine.engine import RunEngine

PRINCIPAL = Principal("app", "cred_x", Grant(
    ("runs:execute", "runs:read", "runs:control", "prompts:respond"), ("default",), ()))


async def _run_until(engine: RunEngine, key: str, text: str, status: str) -> str:
    creation, _, _ = engine.create_run(PRINCIPAL, CreateRunRequest(
        idempotency_key=key, input=[InputPart(text=text)]))
    run_id = str(creation["run_id"])
    while engine.state_of(run_id)["status"] != status:
        await asyncio.sleep(0.01)
    return run_id


def test_answering_costs_the_same_at_any_history_length(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        engine = _engine(tmp_path)
        costs = []
        for size in (10, 4000):
            run_id = await _run_until(
                engine, f"k{size}",
                f"colossus-script v1\nrepeat {size} say .\nask Go on? | yes | no\nsleep forever",
                "WAITING_FOR_INPUT")
            pending = engine.state_of(run_id)["pending"]
            journal = engine.store.journal
            before = journal.records_verified
            engine.respond(PRINCIPAL, RespondInteractionRequest(
                run_id=run_id, interaction_id=pending["id"], prompt=PromptAnswer(choice="yes")))
            costs.append(journal.records_verified - before)
            engine.cancel_run(PRINCIPAL, run_id)
        await engine.shutdown()
        return costs

    small, large = asyncio.run(scenario())
    assert small == large and small < 20


def test_recording_progress_checks_a_bounded_tail_per_event(tmp_path: Path) -> None:
    async def scenario() -> dict[int, int]:
        engine = _engine(tmp_path)
        checked = {}
        for size in (100, 600):
            journal = engine.store.journal
            before = journal.records_verified
            await _run_until(engine, f"k{size}", f"colossus-script v1\nrepeat {size} say .",
                             "SUCCEEDED")
            checked[size] = journal.records_verified - before
        await engine.shutdown()
        return checked

    checked = asyncio.run(scenario())
    # A replay per append would check about size^2 / 2 records; the tail, a few per event.
    for size, count in checked.items():
        assert count <= 8 * size + 50, (size, count)
