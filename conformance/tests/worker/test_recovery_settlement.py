"""How start-up recovery settles what a crash left open (W13), in process.

A crash is imitated by stopping every run's task without the graceful-stop
record, then opening a second engine on the same journal file. That reaches
states a real crash leaves only in a narrow window: a run already recorded as
``CANCELLING`` but not yet ``CANCELLED``.
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
    RunMode,
)
from colossus_reference_worker.credentials import Grant, Principal
from colossus_reference_worker.engine.engine import RunEngine

PRINCIPAL = Principal("app", "cred_x", Grant(
    ("runs:execute", "runs:read", "runs:control", "prompts:respond"), ("default",), ()))


async def _create(engine: RunEngine, key: str, script: str, status: str,
                  mode: RunMode = RunMode.EXECUTE) -> str:
    creation, _, _ = engine.create_run(PRINCIPAL, CreateRunRequest(
        idempotency_key=key, mode=mode,
        input=[InputPart(text="colossus-script v1\n" + script)]))
    run_id = str(creation["run_id"])
    while engine.state_of(run_id)["status"] != status:
        await asyncio.sleep(0.01)
    return run_id


async def _crash(engine: RunEngine) -> None:
    """Stop every run task as a killed process would: no graceful-stop record."""
    tasks = [d.task for d in engine.drivers.values() if d.task is not None]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    engine.store.journal.close()


def test_cancelling_becomes_cancelled_and_a_plan_stays_a_draft(tmp_path: Path) -> None:
    async def scenario() -> tuple[dict[str, int], dict[str, object], dict[str, object]]:
        engine = _engine(tmp_path)
        cancelling = await _create(engine, "c", "say before\nsleep forever", "RUNNING")
        engine.append(cancelling, {"type": "status", "previous": "RUNNING",
                                   "status": "CANCELLING"})
        planning = await _create(engine, "p", "say drafting\nask Go on? | yes | no",
                                 "WAITING_FOR_INPUT", RunMode.PLAN)
        await _crash(engine)

        again = _engine(tmp_path)
        counts = again.recover()
        first, second = again.state_of(cancelling), again.state_of(planning)
        creation = again.store.tail(planning)
        assert creation is not None
        await again.shutdown()
        return counts, first, {**second, "plan": creation.creation["plan"]}

    counts, cancelled, interrupted = asyncio.run(scenario())
    assert counts == {"cancelled": 1, "interrupted": 1}
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["result"] == {"output_text": "before"}
    assert interrupted["status"] == "INTERRUPTED"
    result = interrupted["result"]
    assert isinstance(result, dict)
    # The plan was never finished: it is still a draft at the revision the run was given.
    assert result["plan"] == {**interrupted["plan"], "status": "DRAFT"}  # type: ignore[dict-item]
    assert result["output_text"] == "drafting"


def test_an_answer_recorded_before_a_crash_is_not_asked_again(tmp_path: Path) -> None:
    async def scenario() -> tuple[str, str, list[str]]:
        engine = _engine(tmp_path)
        run_id = await _create(engine, "a", "ask Go on? | yes | no\nsay after the answer",
                               "WAITING_FOR_INPUT")
        pending = engine.state_of(run_id)["pending"]
        # The run's task is gone before the answer arrives, so nothing acts on it: the
        # answer and the move back to RUNNING are recorded, then the process dies.
        task = engine.drivers[run_id].task
        assert task is not None
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        engine.respond(PRINCIPAL, RespondInteractionRequest(
            run_id=run_id, interaction_id=pending["id"], prompt=PromptAnswer(choice="yes")))
        engine.store.journal.close()

        again = _engine(tmp_path)
        again.recover()
        while again.state_of(run_id)["status"] not in ("SUCCEEDED", "WAITING_FOR_INPUT"):
            await asyncio.sleep(0.01)
        state = again.state_of(run_id)
        full = again.store.full(run_id)
        assert full is not None
        kinds = [e["event"]["type"] for e in full.events]
        await again.shutdown()
        return state["status"], state["result"]["output_text"] if state["result"] else "", kinds

    status, output, kinds = asyncio.run(scenario())
    assert status == "SUCCEEDED"
    assert output == "after the answer"
    assert kinds.count("interaction_requested") == 1
