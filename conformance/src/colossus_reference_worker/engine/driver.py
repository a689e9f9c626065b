"""Drives one run's executor and records what it does (the RunContext)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..config import Limits, WorkerConfig
from ..errors import JournalIntegrityError, StorageUnavailable
from ..runtime.executor import Executor, RunCancelled, RunFailed, WorkerCrash
from .model import TERMINAL, Event, State
from .runs import EventLimitReached, RunStore, now_us

log = logging.getLogger(__name__)

T = TypeVar("T")
# Waits between attempts to record a run's progress while the journal cannot be written.
_STORAGE_RETRY_FIRST_SECONDS = 0.1
_STORAGE_RETRY_MAX_SECONDS = 2.0


class DriverHost(Protocol):
    """What a driver uses of the engine that owns it (``RunEngine``), named here so the
    driver needs no import of the engine, which imports it."""

    config: WorkerConfig
    limits: Limits
    store: RunStore

    def state_of(self, run_id: str) -> State: ...

    def append(self, run_id: str, event: Event, *, pc: int | None = None,
               private: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def terminate(self, run_id: str, status: str, result: dict[str, Any]) -> None: ...

    def driver_done(self, driver: RunDriver) -> None: ...


class RunDriver:
    """One live run: its executor task, its cancel flag and its pending answer."""

    def __init__(self, engine: DriverHost, creation: dict[str, Any], output_so_far: str) -> None:
        self.engine = engine
        self.creation = creation
        self.run_id: str = creation["run_id"]
        self.executor = Executor(creation, output_so_far)
        self.cancel_requested = False
        self.wake = asyncio.Event()
        self.answer: asyncio.Future[Any] | None = None
        self.task: asyncio.Task[None] | None = None
        self.output_bytes = len(output_so_far.encode())

    # --- engine side ------------------------------------------------------------------

    def start(self, start_pc: int) -> None:
        self.task = asyncio.get_running_loop().create_task(self._main(start_pc))

    def request_cancel(self) -> None:
        self.cancel_requested = True
        self.wake.set()
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(RunCancelled())

    def deliver(self, answer: Any) -> None:
        if self.answer is not None and not self.answer.done():
            self.answer.set_result(answer)

    # --- RunContext ---------------------------------------------------------------------

    def _append(self, event: Event, pc: int | None = None, private: dict[str, Any] | None = None
                ) -> dict[str, Any]:
        if self.cancel_requested:
            raise RunCancelled()
        return self.engine.append(self.run_id, event, pc=pc, private=private)

    async def _durably(self, write: Callable[[], T]) -> T:
        """Run one journal write, waiting for storage to come back if it cannot be made.

        A full disk must not leave a run RUNNING with no driver and its active-run
        slot held: the run keeps its place and retries the very write that failed
        (nothing of it was committed), so it ends in a recorded state once space is
        freed. A graceful stop cancels the wait and leaves the run to recovery.
        """
        delay = _STORAGE_RETRY_FIRST_SECONDS
        while True:
            try:
                return write()
            except StorageUnavailable as exc:
                if delay == _STORAGE_RETRY_FIRST_SECONDS:
                    log.error("run %s waits for storage: %s", self.run_id, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _STORAGE_RETRY_MAX_SECONDS)

    async def set_status(self, status: str, pc: int | None = None) -> None:
        def write() -> None:
            state = self.engine.state_of(self.run_id)
            self._append({"type": "status", "previous": state["status"], "status": status}, pc)
        await self._durably(write)

    async def output(self, text: str, pc: int | None) -> None:
        size = len(text.encode())
        if self.output_bytes + size > self.engine.limits.max_output_bytes:
            raise RunFailed("output_limit", "the run released more text than allowed")
        await self._durably(lambda: self._append({"type": "output", "text": text}, pc))
        self.output_bytes += size
        await asyncio.sleep(0)

    async def tool(self, activity_id: str, action_class: str, category: str, phase: str,
                   pc: int | None) -> None:
        await self._durably(lambda: self._append(
            {"type": "tool", "activity_id": activity_id, "action_class": action_class,
             "display_category": category, "phase": phase}, pc))
        await asyncio.sleep(0)

    async def _ask(self, interaction: dict[str, Any], pc: int, private: dict[str, Any]) -> Any:
        tail = self.engine.store.tail(self.run_id)
        if tail is not None:
            # Resumed after a crash that followed a recorded answer to this very step:
            # continue with that answer rather than asking the same question again.
            kept = tail.head.payload.get("private") or {}
            if kept.get("answer_pc") == pc and "answer" in kept:
                return kept["answer"]
            # Re-attached after a graceful restart while this very question was open:
            # wait for its answer again rather than asking a second time.
            current = tail.state
            if (current["status"] == "WAITING_FOR_INPUT" and current["pending"] is not None
                    and current["pc"] == pc):
                self.answer = asyncio.get_running_loop().create_future()
                try:
                    return await self.answer
                finally:
                    self.answer = None
        loop = asyncio.get_running_loop()

        def write() -> None:
            state = self.engine.state_of(self.run_id)
            interaction["id"] = f"ix_{state['last_sequence'] + 2}"
            interaction["create_time"] = now_us()
            # Both records or neither: recovery must never see WAITING_FOR_INPUT without
            # the interaction it waits on.
            with self.engine.store.transaction():
                self._append({"type": "status", "previous": state["status"],
                              "status": "WAITING_FOR_INPUT"}, pc)
                self.engine.append(self.run_id, {"type": "interaction_requested",
                                                 "interaction": interaction}, pc=pc,
                                   private=private)

        await self._durably(write)
        self.answer = loop.create_future()
        try:
            return await self.answer
        finally:
            self.answer = None

    async def prompt(self, question: str, choices: tuple[str, ...], pc: int) -> str:
        answer = await self._ask(
            {"kind": "prompt", "question": question, "choices": list(choices)}, pc, {}
        )
        return str(answer)

    async def approval(self, action_class: str, category: str, origin: str, tool: str,
                       pc: int) -> bool:
        interaction: dict[str, Any] = {
            "kind": "approval", "action_class": action_class,
            "binding": "bnd_" + secrets.token_urlsafe(24),
        }
        if origin:
            interaction["origin"] = origin
        else:
            interaction["display_category"] = category
        return bool(await self._ask(interaction, pc, {"tool": tool}))

    async def sleep(self, seconds: float | None) -> None:
        if self.cancel_requested:
            raise RunCancelled()
        try:
            await asyncio.wait_for(self.wake.wait(), seconds)
        except asyncio.TimeoutError:
            return
        if self.cancel_requested:
            raise RunCancelled()

    def crash_allowed(self) -> bool:
        return self.engine.config.allow_crash_step

    # --- the task -----------------------------------------------------------------------

    async def _main(self, start_pc: int) -> None:
        try:
            try:
                if self.engine.state_of(self.run_id)["status"] == "QUEUED":
                    await self.set_status("RUNNING", pc=start_pc)
                result = await self.executor.run(self, start_pc)
                await self._durably(lambda: self._finish("SUCCEEDED", result))
            except RunCancelled:
                await self._durably(lambda: self._finish("CANCELLED", self.executor.result()))
            except RunFailed as failure:
                code, message = failure.code, failure.message
                await self._durably(lambda: self._fail(code, message))
            except EventLimitReached:
                await self._durably(
                    lambda: self._fail("event_limit", "the run reached its event limit"))
            except WorkerCrash:
                log.warning("crash step: stopping the worker abruptly")
                os._exit(137)
        except asyncio.CancelledError:
            raise  # worker shutdown: the run stays as recorded and is recovered later
        except JournalIntegrityError:
            log.error("run %s: journal integrity failure; the run is left as recorded",
                      self.run_id)
        except Exception:
            log.exception("run %s: unexpected runtime failure", self.run_id)
            try:
                self._fail("runtime_error", "the run failed unexpectedly")
            except Exception:
                log.exception("run %s: could not record the failure", self.run_id)
        finally:
            self.engine.driver_done(self)

    def _fail(self, code: str, message: str) -> None:
        result = self.executor.result()
        result["failure"] = {"code": code, "message": message}
        self._finish("FAILED", result)

    def _finish(self, status: str, result: dict[str, Any]) -> None:
        state = self.engine.state_of(self.run_id)
        if state["status"] in TERMINAL:
            return
        if state["status"] == "CANCELLING" or self.cancel_requested:
            status = "CANCELLED"
            result.pop("failure", None)
            if "plan" in result:
                result["plan"]["status"] = "DRAFT"
        self.engine.terminate(self.run_id, status, result)
