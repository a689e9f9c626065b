"""One case: its connections (opened on first use), its steps in order and the references
between them.

The sync client's steps are here; ``clients/python-async`` runs the same steps through
``AsyncClient`` and shares everything that is not an SDK call.
"""

from __future__ import annotations

import base64
import logging
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import colossus_agent_client as colossus
from errors import step_error
from frames import wait_for_release
from views import (
    artifact_view,
    created_view,
    downloaded_view,
    enum_name,
    event_view,
    run_view,
    server_info_view,
)

log = logging.getLogger("conformance-client")


class CountingCredentialProvider:
    """A provider that returns the bearer exactly as received and counts the SDK's calls (C5).

    It implements the SDK's provider interface itself instead of wrapping
    ``InMemoryCredentialProvider``, which checks the grammar when constructed: a malformed
    bearer must reach the SDK's connect path, so the case proves that path refuses it.
    The runner compares the count with the trust verdict: a connection refused by a
    trust check must never have asked for the bearer.

    With ``failing`` it raises instead, as a broken keyring would, and its message carries
    the bearer: an SDK must report a credential failure without repeating that text.
    """

    __slots__ = ("_bearer", "_failing", "calls")

    def __init__(self, bearer: str, *, failing: bool = False) -> None:
        self._bearer = bearer
        self._failing = failing
        self.calls = 0

    def load_bearer(self) -> str:
        self.calls += 1
        if self._failing:
            raise OSError(f"the keyring daemon refused the entry {self._bearer}")
        return self._bearer

    def __repr__(self) -> str:
        return f"CountingCredentialProvider(<redacted>, calls={self.calls})"


def sidecar_options(spec: dict[str, Any]) -> colossus.SidecarOptions:
    grant = spec["grant"]
    return colossus.SidecarOptions(
        executable=spec["worker_command"][0],
        extra_args=tuple(spec["worker_command"][1:]),
        application_id=spec["application_id"],
        scopes=tuple(grant["scopes"]),
        roles=tuple(grant["roles"]),
        tools=tuple(grant["tools"]),
        state_dir=Path(spec["state_dir"]),
        timeout=15.0,
    )


def daemon_options(spec: dict[str, Any], provider: CountingCredentialProvider) -> colossus.DaemonOptions:
    return colossus.DaemonOptions(
        public_api_dir=Path(spec["public_api_dir"]),
        expected_instance_id=spec["expected_instance_id"],
        expected_certificate_sha256=spec["expected_certificate_sha256"],
        expected_deployment_mode=colossus.DeploymentMode[
            spec.get("expected_deployment_mode", "SHARED_DAEMON")
        ],
        credentials=provider,
        timeout=15.0,
        connect_timeout=10.0,
    )


def create_arguments(args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The input parts and keyword arguments of ``runs.create`` for a ``create_run`` step."""
    parts: list[Any] = []
    for part in args.get("input", []):
        if "text" in part:
            parts.append(colossus.TextPart(text=part["text"]))
        else:
            parts.append(
                colossus.ArtifactPart(artifact_id=part["artifact_id"], media_type=part.get("media_type"))
            )
    kwargs: dict[str, Any] = {}
    for name in ("idempotency_key", "role", "session_id", "end_user_id", "traceparent", "tracestate"):
        if name in args:
            kwargs[name] = args[name]
    if "max_turns" in args:
        kwargs["max_turns"] = int(args["max_turns"])
    if "rate_limit_retries" in args:
        kwargs["rate_limit_retries"] = args["rate_limit_retries"]
    if "mode" in args:
        kwargs["mode"] = colossus.RunMode[args["mode"]]
    if "plan_action" in args:
        pa = args["plan_action"]
        kwargs["plan_action"] = colossus.PlanAction(
            source_run_id=pa["source_run_id"],
            revision=int(pa["revision"]),
            kind=colossus.PlanActionKind[pa["kind"]],
        )
    if "research" in args:
        r = args["research"]
        kwargs["research"] = colossus.ResearchOptions(
            depth=int(r["depth"]), lanes=tuple(colossus.EvidenceLane[x] for x in r["lanes"])
        )
    return parts, kwargs


def answer_for(args: dict[str, Any]) -> Any:
    if "choice" in args:
        return colossus.PromptAnswer(choice=args["choice"])
    return colossus.ApprovalAnswer(
        binding=args["binding"], decision=colossus.ApprovalDecision[args.get("decision", "APPROVE")]
    )


def upload_bytes(args: dict[str, Any]) -> bytes:
    if "text" in args:
        return bytes(args["text"].encode())
    if "data_base64" in args:
        return base64.b64decode(args["data_base64"])
    return bytes(i % 251 for i in range(int(args["size_bytes"])))


class UnresolvedReference(Exception):
    pass


def resolve(value: Any, results: dict[str, dict[str, Any]]) -> Any:
    """Replaces ``$step.path`` strings by values from earlier steps' reports."""
    if isinstance(value, str) and value.startswith("$") and len(value) > 1:
        step, *path = value[1:].split(".")
        current: Any = results.get(step, {}).get("value")
        for segment in path:
            if isinstance(current, list) and segment.lstrip("-").isdigit():
                index = int(segment)
                if not -len(current) <= index < len(current):
                    raise UnresolvedReference(value)
                current = current[index]
            elif isinstance(current, dict) and segment in current:
                current = current[segment]
            else:
                raise UnresolvedReference(value)
        if current is None:
            raise UnresolvedReference(value)
        return current
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    return value


class CaseState:
    """What the sync and the async runner of one case share: connections, providers, reports."""

    def __init__(self, instruction: dict[str, Any], bearers: dict[str, str]):
        self.instruction = instruction
        self.connections = {c["name"]: c for c in instruction["connections"]}
        self.default = instruction["connections"][0]["name"] if instruction["connections"] else None
        self.bearers = bearers
        self.providers: dict[str, CountingCredentialProvider] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.reports: list[dict[str, Any]] = []
        self.calls_at_release: dict[str, int] = {}  # step id -> provider calls when released

    def credential_calls(self, name: str | None) -> int | None:
        """Calls so far of a daemon connection's provider; None for sidecars and sleeps."""
        spec = self.connections.get(name or self.default or "")
        if spec is None or spec["placement"] != "daemon":
            return None
        provider = self.providers.get(spec["name"])
        return provider.calls if provider is not None else 0

    def provider(self, name: str) -> CountingCredentialProvider:
        failing = self.connections[name].get("credential_provider") == "failing"
        return self.providers.setdefault(
            name, CountingCredentialProvider(self.bearers[name], failing=failing)
        )

    @contextmanager
    def step(self, step: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Records one step: a failure inside becomes its error, and the report is kept."""
        report: dict[str, Any] = {"id": step["id"], "op": step["op"]}
        started = time.monotonic()
        conn = step.get("args", {}).get("conn")
        calls_before = self.credential_calls(conn) if step["op"] not in ("sleep", "sync") else None
        try:
            yield report
        except UnresolvedReference as exc:
            report["error"] = {"kind": "unresolved_reference", "message": f"cannot resolve {exc}"}
        except Exception as exc:
            log.debug("step %s failed: %s", step["id"], traceback.format_exc())
            report["error"] = step_error(exc)
            key = getattr(exc, "idempotency_key", None)
            if key:
                report.setdefault("value", {})["idempotency_key"] = key
        if calls_before is not None:
            report["credential_calls"] = (self.credential_calls(conn) or 0) - calls_before
            if step["id"] in self.calls_at_release:
                after = (self.credential_calls(conn) or 0) - self.calls_at_release[step["id"]]
                report["credential_calls_after_sync"] = after
        report["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
        self.results[step["id"]] = report
        self.reports.append(report)

    def result(self) -> dict[str, Any]:
        return {"type": "result", "case": self.instruction["case"], "steps": self.reports}

    def released(self, step: str, conn: str | None) -> None:
        """Notes the provider's count when a step's sync point is released."""
        self.calls_at_release[step] = self.credential_calls(conn) or 0


class PageTally:
    """The list_runs view, filled page by page; what arrived before a failure is reported too."""

    def __init__(self, args: dict[str, Any], report: dict[str, Any]):
        self.max_pages = int(args.get("max_pages", 1000))
        self.create_after_first_page: list[Any] = args.get("create_after_first_page", [])
        self.runs: list[colossus.Run] = []
        self.view: dict[str, Any] = {"run_ids": [], "statuses": [], "created_run_ids": [], "pages": 0}
        self.view["stopped_at_max_pages"] = False
        self.view["next_page_token"] = ""
        report["value"] = self.view

    def add(self, page: Any) -> list[Any]:
        """Counts a page in; returns the scripts to create now (only after the first page)."""
        self.view["pages"] += 1
        self.view["next_page_token"] = page.next_page_token
        self.runs.extend(page.runs)
        self.view["run_ids"] = [r.run_id for r in self.runs]
        self.view["statuses"] = [enum_name(r.status) for r in self.runs]
        return self.create_after_first_page if self.view["pages"] == 1 else []

    def created(self, run_id: str) -> None:
        self.view["created_run_ids"].append(run_id)

    def at_limit(self) -> bool:
        if self.view["pages"] >= self.max_pages:
            self.view["stopped_at_max_pages"] = True
        return bool(self.view["stopped_at_max_pages"])


def list_filter(args: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``runs.list`` for a list_runs step."""
    return {
        "statuses": [colossus.RunStatus[s] for s in args.get("statuses", [])],
        "page_size": int(args.get("page_size", 0)),
        "page_token": str(args.get("page_token", "")),
    }


class WatchTally:
    """The watch view: events and reconnect hooks, kept in the report as they arrive so a
    failure still shows what was delivered before it."""

    def __init__(self, args: dict[str, Any], report: dict[str, Any]):
        self.report = report
        self.events: list[dict[str, Any]] = []
        self.hooks: list[dict[str, Any]] = []
        self.until = args.get("until_kind")
        self.limit = args.get("max_events")
        self.sync_after = args.get("sync_after_events")
        self.stopped_early = False
        report["value"] = {"events": self.events, "completed": False, "reconnects": 0}
        self.options: dict[str, Any] = {
            "after_sequence": int(args.get("after_sequence", 0)),
            "on_reconnect": self.on_reconnect,
            "idle_timeout": float(args.get("idle_timeout_seconds", 20.0)),
        }

    def on_reconnect(self, info: Any) -> None:
        hook = {"hook": "reconnect", "after_sequence": info.after_sequence, "attempt": info.attempt}
        self.hooks.append(hook)
        self.report["value"]["reconnects"] = len(self.hooks)  # reported on failure too

    def add(self, event: colossus.RunEvent) -> bool:
        """Keeps an event; True once the step's stop condition is met."""
        self.events.append(event_view(event))
        last_kind = self.events[-1]["kind"]
        if (self.until and last_kind == self.until) or (self.limit and len(self.events) >= int(self.limit)):
            self.stopped_early = True
        return self.stopped_early

    def at_sync_point(self) -> bool:
        """True right after the event the step's ``sync_after_events`` names."""
        return self.sync_after is not None and len(self.events) == int(self.sync_after)

    def keep_hooks(self) -> None:
        if self.hooks:
            self.report["hooks"] = self.hooks

    def outcome(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        view = {"events": self.events, "completed": not self.stopped_early, "reconnects": len(self.hooks)}
        return view, self.hooks


def wait_options(args: dict[str, Any]) -> dict[str, Any]:
    """``runs.wait`` keyword arguments of a ``wait_run`` step (the idle timeout bounds it)."""
    return {"idle_timeout": float(args.get("idle_timeout_seconds", 20.0))}


def text_stream_options(args: dict[str, Any]) -> dict[str, Any]:
    """``runs.text_stream`` keyword arguments of a ``text_stream`` step."""
    return {**wait_options(args), "after_sequence": args.get("after_sequence", 0)}


class TextTally:
    """The text stream view: the pieces so far, kept in the report so a failure shows them."""

    def __init__(self, report: dict[str, Any]):
        self.texts: list[str] = []
        report["value"] = {"texts": self.texts, "completed": False}

    def add(self, text: str) -> None:
        self.texts.append(text)

    def done(self) -> dict[str, Any]:
        return {"texts": self.texts, "completed": True}


class CaseRun(CaseState):
    """Executes the steps of one case against one or more SDK clients."""

    def __init__(self, instruction: dict[str, Any], bearers: dict[str, str]):
        super().__init__(instruction, bearers)
        self.clients: dict[str, colossus.Client] = {}

    def client(self, name: str | None) -> colossus.Client:
        name = name or self.default
        assert name is not None
        if name in self.clients:
            return self.clients[name]
        spec = self.connections[name]
        if spec["placement"] == "sidecar":
            client = colossus.Client.start_sidecar(sidecar_options(spec))
        else:
            client = colossus.Client.connect(daemon_options(spec, self.provider(name)))
        self.clients[name] = client
        return client

    def run(self) -> dict[str, Any]:
        for step in self.instruction["steps"]:
            with self.step(step) as report:
                args = resolve(step.get("args", {}), self.results)
                value, hooks = self.perform(step["op"], args, report)
                report["value"] = value
                if hooks:
                    report["hooks"] = hooks
        return self.result()

    def close(self) -> None:
        for client in self.clients.values():
            try:
                client.close()
            except Exception:
                log.debug("close failed: %s", traceback.format_exc())
        self.clients.clear()

    # -- operations ------------------------------------------------------------

    def perform(self, op: str, args: dict[str, Any], report: dict[str, Any]) -> tuple[dict[str, Any], list]:
        if op == "sleep":
            time.sleep(float(args.get("seconds", 0)))
            return {}, []
        if op == "sync":
            wait_for_release(self.instruction["case"], report["id"])
            return {}, []
        conn = args.get("conn")
        if op == "close":
            client = self.clients.pop(conn or self.default or "", None)
            if client is not None:
                client.close()
            return {}, []
        client = self.client(conn)
        if op == "connect":
            return {"server_info": server_info_view(client.server_info)}, []
        if op == "create_run":
            parts, kwargs = create_arguments(args)
            return created_view(client.runs.create(parts, **kwargs)), []
        if op == "get_run":
            return {"run": run_view(client.runs.get(args["run_id"]))}, []
        if op == "cancel_run":
            return {"run": run_view(client.runs.cancel(args["run_id"]))}, []
        if op == "list_runs":
            return self.list_runs(client, args, report), []
        if op == "watch":
            return self.watch(client, args, report)
        if op == "wait_run":
            return {"run": run_view(client.runs.wait(args["run_id"], **wait_options(args)))}, []
        if op == "text_stream":
            texts = TextTally(report)
            with client.runs.text_stream(args["run_id"], **text_stream_options(args)) as stream:
                for text in stream:
                    texts.add(text)
            return texts.done(), []
        if op == "respond":
            answer = answer_for(args)
            return {"run": run_view(client.runs.respond(args["run_id"], args["interaction_id"], answer))}, []
        if op == "upload_artifact":
            artifact = client.artifacts.upload(
                upload_bytes(args), media_type=args["media_type"], display_name=args.get("display_name")
            )
            return {"artifact": artifact_view(artifact)}, []
        if op == "download_artifact":
            return downloaded_view(client.artifacts.download(args["artifact_id"])), []
        raise KeyError(f"unsupported op {op}")

    def list_runs(
        self, client: colossus.Client, args: dict[str, Any], report: dict[str, Any]
    ) -> dict[str, Any]:
        pager = client.runs.list(**list_filter(args))
        tally = PageTally(args, report)
        for page in pager.pages():
            for script in tally.add(page):
                tally.created(client.runs.create(script).run.run_id)
            if tally.at_limit():
                break
        return tally.view

    def watch(
        self, client: colossus.Client, args: dict[str, Any], report: dict[str, Any]
    ) -> tuple[dict[str, Any], list]:
        tally = WatchTally(args, report)
        with client.runs.watch(args["run_id"], **tally.options) as watch:
            try:
                for event in watch:
                    stop = tally.add(event)
                    if tally.at_sync_point():
                        wait_for_release(self.instruction["case"], report["id"])
                        self.released(report["id"], args.get("conn"))
                    if stop:
                        break
            finally:
                tally.keep_hooks()
        return tally.outcome()
