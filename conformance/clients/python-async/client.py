"""Conformance client for the Python SDK's asyncio surface (``colossus.AsyncClient``).

The same protocol and the same catalogue as ``clients/python``, driven through
``AsyncClient`` so the async code paths (their own pre-flight, retries, watch loop,
pagination and artifact streams) are proven separately. Everything that is not an SDK
call (protocol framing, views of SDK objects, error mapping) is shared with the sync
client, so the two columns differ only in how they call the SDK.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import colossus_agent_client as colossus
import frames
import steps
import views
from client import serve

log = logging.getLogger("conformance-client")


class AsyncCaseRun(steps.CaseState):
    """Executes the steps of one case through ``AsyncClient`` instances."""

    def __init__(self, instruction: dict[str, Any], bearers: dict[str, str]):
        super().__init__(instruction, bearers)
        self.clients: dict[str, colossus.AsyncClient] = {}

    async def client(self, name: str | None) -> colossus.AsyncClient:
        name = name or self.default
        assert name is not None
        if name in self.clients:
            return self.clients[name]
        spec = self.connections[name]
        if spec["placement"] == "sidecar":
            client = await colossus.AsyncClient.start_sidecar(steps.sidecar_options(spec))
        else:
            client = await colossus.AsyncClient.connect(steps.daemon_options(spec, self.provider(name)))
        self.clients[name] = client
        return client

    async def run(self) -> dict[str, Any]:
        for step in self.instruction["steps"]:
            with self.step(step) as report:
                args = steps.resolve(step.get("args", {}), self.results)
                value, hooks = await self.perform(step["op"], args, report)
                report["value"] = value
                if hooks:
                    report["hooks"] = hooks
        return self.result()

    async def wait_for_release(self, step: str) -> None:
        """Waits at a sync point on a thread, so the SDK's own tasks keep running meanwhile."""
        await asyncio.to_thread(frames.wait_for_release, self.instruction["case"], step)

    async def close(self) -> None:
        for client in self.clients.values():
            try:
                await client.close()
            except Exception:
                log.debug("close failed: %s", traceback.format_exc())
        self.clients.clear()

    async def perform(
        self, op: str, args: dict[str, Any], report: dict[str, Any]
    ) -> tuple[dict[str, Any], list]:
        if op == "sleep":
            await asyncio.sleep(float(args.get("seconds", 0)))
            return {}, []
        if op == "sync":
            await self.wait_for_release(report["id"])
            return {}, []
        conn = args.get("conn")
        if op == "close":
            closing = self.clients.pop(conn or self.default or "", None)
            if closing is not None:
                await closing.close()
            return {}, []
        client = await self.client(conn)
        if op == "connect":
            return {"server_info": views.server_info_view(client.server_info)}, []
        if op == "create_run":
            parts, kwargs = steps.create_arguments(args)
            return views.created_view(await client.runs.create(parts, **kwargs)), []
        if op == "get_run":
            return {"run": views.run_view(await client.runs.get(args["run_id"]))}, []
        if op == "cancel_run":
            return {"run": views.run_view(await client.runs.cancel(args["run_id"]))}, []
        if op == "list_runs":
            return await self.list_runs(client, args, report), []
        if op == "watch":
            return await self.watch(client, args, report)
        if op == "wait_run":
            run = await client.runs.wait(args["run_id"], **steps.wait_options(args))
            return {"run": views.run_view(run)}, []
        if op == "text_stream":
            texts = steps.TextTally(report)
            async with client.runs.text_stream(args["run_id"], **steps.text_stream_options(args)) as stream:
                async for text in stream:
                    texts.add(text)
            return texts.done(), []
        if op == "respond":
            answer = steps.answer_for(args)
            run = await client.runs.respond(args["run_id"], args["interaction_id"], answer)
            return {"run": views.run_view(run)}, []
        if op == "upload_artifact":
            artifact = await client.artifacts.upload(
                steps.upload_bytes(args),
                media_type=args["media_type"],
                display_name=args.get("display_name"),
            )
            return {"artifact": views.artifact_view(artifact)}, []
        if op == "download_artifact":
            return views.downloaded_view(await client.artifacts.download(args["artifact_id"])), []
        raise KeyError(f"unsupported op {op}")

    async def list_runs(
        self, client: colossus.AsyncClient, args: dict[str, Any], report: dict[str, Any]
    ) -> dict[str, Any]:
        pager = client.runs.list(**steps.list_filter(args))
        tally = steps.PageTally(args, report)
        async for page in pager.pages():
            for script in tally.add(page):
                tally.created((await client.runs.create(script)).run.run_id)
            if tally.at_limit():
                break
        return tally.view

    async def watch(
        self, client: colossus.AsyncClient, args: dict[str, Any], report: dict[str, Any]
    ) -> tuple[dict[str, Any], list]:
        tally = steps.WatchTally(args, report)
        async with client.runs.watch(args["run_id"], **tally.options) as watch:
            try:
                async for event in watch:
                    stop = tally.add(event)
                    if tally.at_sync_point():
                        await self.wait_for_release(report["id"])
                        self.released(report["id"], args.get("conn"))
                    if stop:
                        break
            finally:
                tally.keep_hooks()
        return tally.outcome()


def run_async_case(message: dict[str, Any], bearers: dict[str, str]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        case = AsyncCaseRun(message, bearers)
        try:
            return await case.run()
        finally:
            await case.close()

    return asyncio.run(go())


if __name__ == "__main__":
    sys.exit(serve("python-async", run_async_case))
