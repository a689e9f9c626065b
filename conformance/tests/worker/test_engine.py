"""In-process checks of the run engine where timing over the wire would be indirect."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from colossus_reference_worker._gen.colossus.api.v1alpha1 import CreateRunRequest, InputPart
from colossus_reference_worker.config import Limits, WorkerConfig
from colossus_reference_worker.credentials import Grant, Principal
from colossus_reference_worker.engine.engine import RunEngine
from colossus_reference_worker.errors import ApiError
from colossus_reference_worker.journal import Journal

PRINCIPAL = Principal("app", "cred_x", Grant(("runs:execute", "runs:read", "runs:control"),
                                             ("default",), ()))


def _engine(tmp_path: Path, **limits: int) -> RunEngine:
    roomy = {"create_rate_burst": 10_000, "create_rate_per_second": 10_000,
             "create_rate_per_application_burst": 10_000,
             "create_rate_per_application_per_second": 10_000,
             "max_active_runs": 10_000, "max_active_runs_per_application": 10_000}
    config = WorkerConfig(state_dir=tmp_path, limits=Limits(**{**roomy, **limits}))
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    return RunEngine(journal, config, b"t" * 32, ["plans.continue", "research"])


async def _finished_run(engine: RunEngine, key: str, text: str) -> str:
    creation, _, _ = engine.create_run(PRINCIPAL, CreateRunRequest(
        idempotency_key=key, input=[InputPart(text=text)]))
    driver = engine.drivers.get(creation["run_id"])
    if driver is not None and driver.task is not None and "sleep forever" not in text:
        await driver.task
    return str(creation["run_id"])


def test_mutation_cost_does_not_grow_with_history(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, int]:
        engine = _engine(tmp_path)
        costs = []
        for size in (10, 4000):
            run_id = await _finished_run(
                engine, f"k{size}",
                f"colossus-script v1\nrepeat {size} say .\nsleep forever")
            while engine.state_of(run_id)["last_sequence"] < size + 1:
                await asyncio.sleep(0.01)
            journal = engine.store._journal
            before = journal.records_verified
            engine.cancel_run(PRINCIPAL, run_id)
            costs.append(journal.records_verified - before)
            await asyncio.sleep(0.05)
        await engine.shutdown()
        return costs[0], costs[1]

    small, large = asyncio.run(scenario())
    assert small == large and small < 20


def test_list_runs_concurrency_is_bounded(tmp_path: Path) -> None:
    async def scenario() -> None:
        engine = _engine(tmp_path)
        for i in range(20):
            await _finished_run(engine, f"k{i}", "x")
        first = asyncio.ensure_future(engine.list_runs(PRINCIPAL, [6], 0, ""))
        await asyncio.sleep(0)  # the first call is now between index batches
        with pytest.raises(ApiError) as caught:
            await engine.list_runs(PRINCIPAL, [6], 0, "")
        assert caught.value.reason == "LIST_CONCURRENCY_LIMIT"
        runs, token = await first
        assert runs == [] and token == ""
        assert (await engine.list_runs(PRINCIPAL, [], 0, ""))[0]  # slot released
        await engine.shutdown()

    asyncio.run(scenario())
