"""A second cancel while the run is CANCELLING changes nothing (W10), checked in process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from colossus_reference_worker._gen.colossus.api.v1alpha1 import CreateRunRequest, InputPart
from colossus_reference_worker.config import Limits, WorkerConfig
from colossus_reference_worker.credentials import Grant, Principal
from colossus_reference_worker.engine.engine import RunEngine
from colossus_reference_worker.journal import Journal

PRINCIPAL = Principal("app", "cred_x", Grant(("runs:execute", "runs:read", "runs:control"),
                                             ("default",), ()))


def _engine(tmp_path: Path) -> RunEngine:
    config = WorkerConfig(state_dir=tmp_path, limits=Limits())
    journal = Journal(tmp_path / "journal.sqlite3", b"k" * 32)
    return RunEngine(journal, config, b"t" * 32, [])


def test_a_second_cancel_while_cancelling_appends_nothing(tmp_path: Path) -> None:
    # W10: cancel is idempotent; a repeat while the run is still CANCELLING must not
    # record a second CANCELLING (a planted "only terminal runs are done" check did).
    async def scenario() -> tuple[list[tuple[str, str]], str]:
        engine = _engine(tmp_path)
        creation, _, _ = engine.create_run(PRINCIPAL, CreateRunRequest(
            idempotency_key="k", input=[InputPart(text="colossus-script v1\nsleep forever")]))
        run_id = creation["run_id"]
        await asyncio.sleep(0.05)
        _, first = engine.cancel_run(PRINCIPAL, run_id)
        assert first["status"] == "CANCELLING"
        _, second = engine.cancel_run(PRINCIPAL, run_id)
        assert second["status"] == "CANCELLING"
        assert second["last_sequence"] == first["last_sequence"]
        for _ in range(200):
            if engine.state_of(run_id)["status"] == "CANCELLED":
                break
            await asyncio.sleep(0.01)
        statuses = [(e["event"]["previous"], e["event"]["status"])
                    async for e in engine.watch(run_id, 0) if e["event"]["type"] == "status"]
        final = engine.state_of(run_id)["status"]
        await engine.shutdown()
        return statuses, final

    statuses, final = asyncio.run(scenario())
    assert [s for s in statuses if s[1] == "CANCELLING"] == [("RUNNING", "CANCELLING")]
    assert final == "CANCELLED"
