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
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import client as shared
import colossus

log = logging.getLogger("conformance-client")


class AsyncCaseRun:
    """Executes the steps of one case through ``AsyncClient`` instances."""

    def __init__(self, instruction: dict[str, Any], bearers: dict[str, str]):
        self.instruction = instruction
        self.connections = {c["name"]: c for c in instruction["connections"]}
        self.default = instruction["connections"][0]["name"] if instruction["connections"] else None
        self.bearers = bearers
        self.clients: dict[str, colossus.AsyncClient] = {}
        self.providers: dict[str, shared.CountingCredentialProvider] = {}
        self.results: dict[str, dict[str, Any]] = {}

    def credential_calls(self, name: str | None) -> int | None:
        spec = self.connections.get(name or self.default or "")
        if spec is None or spec["placement"] != "daemon":
            return None
        provider = self.providers.get(spec["name"])
        return provider.calls if provider is not None else 0

    async def client(self, name: str | None) -> colossus.AsyncClient:
        name = name or self.default
        assert name is not None
        if name in self.clients:
            return self.clients[name]
        spec = self.connections[name]
        if spec["placement"] == "sidecar":
            client = await colossus.AsyncClient.start_sidecar(shared.sidecar_options(spec))
        else:
            provider = self.providers.setdefault(name, shared.CountingCredentialProvider(self.bearers[name]))
            client = await colossus.AsyncClient.connect(shared.daemon_options(spec, provider))
        self.clients[name] = client
        return client

    async def run(self) -> dict[str, Any]:
        reports = []
        for step in self.instruction["steps"]:
            report: dict[str, Any] = {"id": step["id"], "op": step["op"]}
            started = time.monotonic()
            conn = step.get("args", {}).get("conn")
            calls_before = self.credential_calls(conn) if step["op"] != "sleep" else None
            try:
                args = shared.resolve(step.get("args", {}), self.results)
                value, hooks = await self.perform(step["op"], args, report)
                report["value"] = value
                if hooks:
                    report["hooks"] = hooks
            except shared.UnresolvedReference as exc:
                report["error"] = {"kind": "unresolved_reference", "message": f"cannot resolve {exc}"}
            except Exception as exc:
                log.debug("step %s failed: %s", step["id"], traceback.format_exc())
                report["error"] = shared.step_error(exc)
                key = getattr(exc, "idempotency_key", None)
                if key:
                    report.setdefault("value", {})["idempotency_key"] = key
            if calls_before is not None:
                report["credential_calls"] = (self.credential_calls(conn) or 0) - calls_before
            report["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
            self.results[step["id"]] = report
            reports.append(report)
        return {"type": "result", "case": self.instruction["case"], "steps": reports}

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
        conn = args.get("conn")
        if op == "close":
            closing = self.clients.pop(conn or self.default or "", None)
            if closing is not None:
                await closing.close()
            return {}, []
        client = await self.client(conn)
        if op == "connect":
            return {"server_info": shared.server_info_view(client.server_info)}, []
        if op == "create_run":
            parts, kwargs = shared.create_arguments(args)
            return shared.created_view(await client.runs.create(parts, **kwargs)), []
        if op == "get_run":
            return {"run": shared.run_view(await client.runs.get(args["run_id"]))}, []
        if op == "cancel_run":
            return {"run": shared.run_view(await client.runs.cancel(args["run_id"]))}, []
        if op == "list_runs":
            return await self.list_runs(client, args, report), []
        if op == "watch":
            return await self.watch(client, args, report)
        if op == "respond":
            answer = shared.answer_for(args)
            run = await client.runs.respond(args["run_id"], args["interaction_id"], answer)
            return {"run": shared.run_view(run)}, []
        if op == "upload_artifact":
            artifact = await client.artifacts.upload(
                shared.upload_bytes(args),
                media_type=args["media_type"],
                display_name=args.get("display_name"),
            )
            return {"artifact": shared.artifact_view(artifact)}, []
        if op == "download_artifact":
            return shared.downloaded_view(await client.artifacts.download(args["artifact_id"])), []
        raise KeyError(f"unsupported op {op}")

    async def list_runs(
        self, client: colossus.AsyncClient, args: dict[str, Any], report: dict[str, Any]
    ) -> dict[str, Any]:
        statuses = [colossus.RunStatus[s] for s in args.get("statuses", [])]
        pager = client.runs.list(statuses=statuses, page_size=int(args.get("page_size", 0)))
        runs: list[colossus.Run] = []
        created: list[str] = []
        max_pages = int(args.get("max_pages", 1000))
        view: dict[str, Any] = {"run_ids": [], "statuses": [], "created_run_ids": created, "pages": 0}
        view["stopped_at_max_pages"] = False
        report["value"] = view
        async for page in pager.pages():
            view["pages"] += 1
            runs.extend(page.runs)
            view["run_ids"] = [r.run_id for r in runs]
            view["statuses"] = [shared.enum_name(r.status) for r in runs]
            if view["pages"] == 1:
                for script in args.get("create_after_first_page", []):
                    created.append((await client.runs.create(script)).run.run_id)
            if view["pages"] >= max_pages:
                view["stopped_at_max_pages"] = True
                break
        return view

    async def watch(
        self, client: colossus.AsyncClient, args: dict[str, Any], report: dict[str, Any]
    ) -> tuple[dict[str, Any], list]:
        events: list[dict[str, Any]] = []
        hooks: list[dict[str, Any]] = []
        until = args.get("until_kind")
        limit = args.get("max_events")

        def on_reconnect(info: Any) -> None:
            hooks.append(
                {"hook": "reconnect", "after_sequence": info.after_sequence, "attempt": info.attempt}
            )

        report["value"] = {"events": events, "completed": False}
        stopped_early = False
        async with client.runs.watch(
            args["run_id"],
            after_sequence=int(args.get("after_sequence", 0)),
            on_reconnect=on_reconnect,
            idle_timeout=float(args.get("idle_timeout_seconds", 20.0)),
        ) as watch:
            try:
                async for event in watch:
                    events.append(shared.event_view(event))
                    if (until and events[-1]["kind"] == until) or (limit and len(events) >= int(limit)):
                        stopped_early = True
                        break
            finally:
                if hooks:
                    report["hooks"] = hooks
        return {"events": events, "completed": not stopped_early, "reconnects": len(hooks)}, hooks


def run_async_case(message: dict[str, Any], bearers: dict[str, str]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        case = AsyncCaseRun(message, bearers)
        try:
            return await case.run()
        finally:
            await case.close()

    return asyncio.run(go())


if __name__ == "__main__":
    sys.exit(shared.serve("python-async", run_async_case))
