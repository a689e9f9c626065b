"""Runs one script (or the default behaviour) against a :class:`RunContext`.

The executor knows nothing about storage: it asks its context to record
events and to wait for answers. Every step index it passes along (``pc``) is
stored with the step's last event, so a run recovered after a restart resumes
at the first step whose events were not all recorded.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from .script import Step, is_script, parse
from .tools import face

# How much of the input's first line a research report quotes as its topic.
_MAX_TOPIC_CHARS = 200


class RunCancelled(Exception):
    """Raised by the context when the run was asked to stop."""


class RunFailed(Exception):
    """Raised by a step to end the run as FAILED."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class WorkerCrash(Exception):
    """The ``crash`` step: the worker must die now (tests only)."""


class RunContext(Protocol):
    async def set_status(self, status: str, pc: int | None = None) -> None: ...
    async def output(self, text: str, pc: int | None) -> None: ...
    async def tool(self, activity_id: str, action_class: str, category: str, phase: str,
                   pc: int | None) -> None: ...
    async def prompt(self, question: str, choices: tuple[str, ...], pc: int) -> str: ...
    async def approval(self, action_class: str, category: str, origin: str, tool: str,
                       pc: int) -> bool: ...
    async def sleep(self, seconds: float | None) -> None: ...
    def crash_allowed(self) -> bool: ...


class Executor:
    """One run's program: the creation record decides what it does."""

    def __init__(self, creation: dict[str, Any], output_so_far: str = "") -> None:
        self._creation = creation
        self.output_text = output_so_far
        self.turns = 0
        texts = [p["text"] for p in creation["input"] if "text" in p]
        self._texts = texts
        self._steps: list[Step] | None = parse(texts[0]) if texts and is_script(texts[0]) else None
        self._tools = set(creation["authority"]["tools"])

    def _activity_id(self, pc: int, suffix: str = "") -> str:
        digest = hashlib.sha256(f"{self._creation['run_id']}:{pc}:{suffix}".encode()).hexdigest()
        return "act_" + digest[:20]

    async def _say(self, ctx: RunContext, text: str, pc: int | None) -> None:
        await ctx.output(text, pc)
        self.output_text += text

    def _turn(self) -> None:
        self.turns += 1
        if self.turns > self._creation["max_turns"]:
            raise RunFailed("turn_limit", "the run used its whole turn budget")

    async def run(self, ctx: RunContext, start_pc: int) -> dict[str, Any]:
        """Execute from ``start_pc``; returns the result of a SUCCEEDED run."""
        research: dict[str, Any] | None = None
        if self._steps is None:
            if start_pc == 0:
                research = await self._default(ctx)
            elif self._creation["mode"] == "RESEARCH":  # resumed after the report
                research = self._research_result()
        else:
            if any(step.op == "research" for step in self._steps[:start_pc]):
                research = self._research_result()  # deterministic: same as before the stop
            for pc in range(start_pc, len(self._steps)):
                step = self._steps[pc]
                outcome = await self._step(ctx, step, pc)
                if outcome is not None:
                    research = outcome
        return self.result(research)

    def result(self, research: dict[str, Any] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"output_text": self.output_text}
        plan = self._creation.get("plan")
        if plan is not None:
            out["plan"] = {"plan_id": plan["plan_id"], "revision": plan["revision"],
                           "status": "DRAFT"}
        if research is not None:  # only a run that produced its report carries one
            out["research"] = research
        return out

    async def _step(self, ctx: RunContext, step: Step, pc: int) -> dict[str, Any] | None:
        done = pc + 1
        if step.op == "say":
            await self._say(ctx, step.text, done)
        elif step.op == "tool":
            self._turn()
            await self._tool(ctx, step.tool, pc, fail=step.mode == "fail")
        elif step.op == "approve":
            self._turn()
            found = face(step.tool)
            assert found is not None
            if step.tool not in self._tools:
                await ctx.tool(self._activity_id(pc), found.action_class, found.display_category,
                               "FAILED", done)
            elif await ctx.approval(found.action_class, found.display_category, step.origin,
                                    step.tool, pc):
                await self._tool(ctx, step.tool, pc, fail=False)
            else:
                await ctx.tool(self._activity_id(pc), found.action_class, found.display_category,
                               "FAILED", done)
        elif step.op == "ask":
            self._turn()
            await ctx.prompt(step.text, step.choices, pc)
        elif step.op == "sleep":
            await ctx.sleep(None if step.millis < 0 else step.millis / 1000)
        elif step.op == "fail":
            raise RunFailed(step.mode, step.text)
        elif step.op == "effect":
            await ctx.tool(self._activity_id(pc), "EXECUTE", "external effect", "STARTED", done)
        elif step.op == "crash":
            if ctx.crash_allowed():
                raise WorkerCrash()
            raise RunFailed("crash_disabled", "this worker does not allow the crash step")
        elif step.op == "plan":
            await self._say(ctx, step.text, done)
        elif step.op == "research":
            return await self._collect(ctx, pc)
        return None

    async def _tool(self, ctx: RunContext, tool: str, pc: int, fail: bool) -> None:
        found = face(tool)
        assert found is not None
        activity = self._activity_id(pc)
        if tool not in self._tools:
            await ctx.tool(activity, found.action_class, found.display_category, "FAILED", pc + 1)
            return
        await ctx.tool(activity, found.action_class, found.display_category, "STARTED", pc)
        await ctx.tool(activity, found.action_class, found.display_category,
                       "FAILED" if fail else "COMPLETED", pc + 1)

    # --- default behaviour when the input carries no script --------------------------------

    async def _default(self, ctx: RunContext) -> dict[str, Any] | None:
        mode = self._creation["mode"]
        joined = "\n".join(self._texts)
        if mode == "PLAN":
            await self._say(ctx, f"Draft plan: {joined.splitlines()[0] if joined else 'untitled'}", 1)
            return None
        if mode == "RESEARCH":
            return await self._collect(ctx, 0)
        action = self._creation.get("plan_action")
        prefix = f"executing plan revision {action['revision']}: " if action else ""
        await self._say(ctx, prefix + joined, 1)
        return None

    async def _collect(self, ctx: RunContext, pc: int) -> dict[str, Any]:
        research = self._creation.get("research")
        if not research:
            raise RunFailed("research_unavailable", "only a research run can collect evidence")
        for depth in range(research["depth"]):
            for lane in research["lanes"]:
                action_class = "NETWORK" if lane == "WEB" else "READ"
                category = {"REPOSITORY": "repository", "WEB": "web pages", "MCP": "mcp servers"}[lane]
                activity = self._activity_id(pc, f"{lane}:{depth}")
                await ctx.tool(activity, action_class, category, "STARTED", pc)
                await ctx.tool(activity, action_class, category, "COMPLETED", pc)
        result = self._research_result()
        await self._say(ctx, result["report"], pc + 1)
        return result

    def _research_result(self) -> dict[str, Any]:
        research = self._creation.get("research") or {"lanes": [], "depth": 0}
        topic = self._texts[0].splitlines()[0] if self._texts and self._texts[0] else "the question"
        # The report is both released as text and kept in the result: quoting a whole
        # 1 MiB first line would double a Run reply and overflow a ListRuns page.
        if len(topic) > _MAX_TOPIC_CHARS:
            topic = topic[:_MAX_TOPIC_CHARS] + "..."
        citations = []
        for index, lane in enumerate(research["lanes"], start=1):
            citation = {"lane": lane, "label": f"{lane.lower()} evidence {index}", "url": ""}
            if lane == "WEB":
                citation["url"] = f"https://example.org/evidence/{index}"
            citations.append(citation)
        report = f"Report on {topic}: {len(citations)} sources over {research['depth']} rounds."
        return {"report": report, "citations": citations}
