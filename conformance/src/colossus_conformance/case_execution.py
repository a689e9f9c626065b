"""One case through one client (or, cross-SDK, through one client per role).

The steps go out in segments: the worker's faults are armed, each segment is one
instruction, runner actions run between segments or at sync points, and the worker's
observations of every lifetime are merged. Once the client has reported, the sidecars'
state folders and the worker's discovery files are read, the raw exchange is logged, and
the case is judged; the clients' own log output must hold no bearer either (C5).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import sync_points
from .bearer_leaks import contains_secret, log_size, read_from
from .case_preparation import PreparedCase, prepare
from .catalogue import Case
from .client_process import ClientProcess, Exchange
from .judging import judge
from .observations import merge_observations, observe
from .results import FAIL, PASS, CaseResult
from .segments import resolve_earlier, split_segments, without_role
from .sidecar_probes import sidecar_facts
from .worker import ManagedWorker

_HANDSHAKE_PATHS = ("worker.connection", "worker.handshakes")
# Longer than any handshake can last: the worker ends each one within its handshake
# timeout (5 s by default) and records it then.
_HANDSHAKE_SETTLE_SECONDS = 15.0


def run_case(
    client: ClientProcess,
    case: Case,
    sdk: str,
    *,
    workers: Callable[[str], ManagedWorker | None],
    scratch: Path,
    log_dir: Path,
    timeout_scale: float,
    roles: dict[str, ClientProcess] | None = None,
) -> tuple[CaseResult, Exchange]:
    """Runs one case; with ``roles`` (cross-SDK cases) each step goes to its role's client.

    ``workers`` gives the running worker of a configuration; the case's scratch files go to
    ``scratch`` and its raw exchange to ``log_dir/<sdk>-cases.jsonl``.
    """
    started = time.monotonic()
    result = CaseResult(sdk, case.id, case.group, case.level, FAIL, requirements=", ".join(case.requirements))
    timeout = case.timeout_seconds * timeout_scale
    worker = None
    try:
        worker = workers(case.worker)
        started = time.monotonic()  # a worker's start-up is not the case's time
        prepared = prepare(case, worker, timeout, scratch)
        if worker is not None and worker.control is not None:
            worker.control.begin_case(case.id, [dict(f) for f in case.faults])
    except Exception as exc:
        result.details.append(f"runner could not prepare the case: {exc}")
        result.seconds = time.monotonic() - started
        return result, Exchange("ok")
    reports: list[dict[str, Any]] = []
    observations: dict[str, Any] = {}
    exchange = Exchange("ok")
    involved = list({id(c): c for c in [client, *(roles or {}).values()]}.values())
    log_offsets = {id(c): log_size(c.log_path) for c in involved}
    client_steps, bound = sync_points.bound_actions(prepared.instruction["steps"])
    at_sync = sync_points.SyncActions(case.id, bound, worker, lambda: observe(worker, result))
    for index, segment in enumerate(split_segments(client_steps, by_role=roles is not None)):
        if segment.action is not None:
            # A runner action between two client segments (a worker restart).
            try:
                observations = merge_observations(observations, observe(worker, result))
                _act(segment.action, worker)
                if worker is not None and worker.control is not None:
                    worker.control.begin_case(case.id, [])
            except Exception as exc:
                result.details.append(f"runner action {segment.action['op']} failed: {exc}")
                break
            continue
        known = {r["id"]: r for r in reports}
        steps = [resolve_earlier(without_role(s), known) for s in segment.steps]
        instruction = dict(prepared.instruction, steps=steps)
        process = roles[segment.role] if roles is not None and segment.role else client
        exchange = process.run_case(instruction, prepared.bearers, timeout + 5.0, on_sync=at_sync.on_sync)
        at_sync.finish()
        observations = merge_observations(observations, at_sync.take_observations())
        result.details.extend(at_sync.missing(steps) if exchange.status == "ok" else [])
        if exchange.status != "ok" or exchange.result is None:
            break
        reports.extend(at_sync.with_reports(exchange.result.get("steps", [])))
        if exchange.result.get("fatal"):
            reports_fatal = exchange.result["fatal"]
            result.details.append(f"client reported a fatal problem in segment {index}: {reports_fatal}")
    result.details.extend(at_sync.problems)
    control = worker.control if worker is not None else None
    if control is not None and any(a["path"].startswith(_HANDSHAKE_PATHS) for a in case.assertions):
        # The worker records a handshake when its own side finishes, which can
        # be a moment after the client's (docs/fault-control.md).
        pending = control.wait_for_handshakes(_HANDSHAKE_SETTLE_SECONDS)
        if pending:
            result.details.append(
                f"the worker still had {pending} TLS handshake(s) in "
                f"progress after {_HANDSHAKE_SETTLE_SECONDS:.0f} s"
            )
    observations = merge_observations(observations, observe(worker, result, end=True))
    if worker is not None:
        observations["discovery"] = worker.discovery_facts()
        if worker.listener_changed:
            try:
                worker.restore_listener()
            except Exception as exc:
                result.details.append(f"runner could not restore the worker's listener: {exc}")
    sidecars = sidecar_facts(prepared.instruction["connections"])
    if sidecars:
        observations["sidecars"] = sidecars
    result.seconds = time.monotonic() - started
    combined = {"type": "result", "case": case.id, "steps": reports}
    _record(log_dir, sdk, prepared, exchange, observations, combined)
    if exchange.status != "ok" or exchange.result is None:
        result.details.append(f"client {exchange.status}: {exchange.detail}")
        return result, exchange
    result.details.extend(judge(case, combined, observations, prepared.bearers, prepared.nonce, client.hello))
    # C5 again: the clients' own log output during this case must not hold a bearer.
    for c in involved:
        if contains_secret(read_from(c.log_path, log_offsets[id(c)]), prepared.bearers):
            result.details.append(f"a bearer appeared in the log output of {c.log_path.name}")
    if not result.details:
        result.status = PASS
    return result, exchange


def _act(action: dict[str, Any], worker: ManagedWorker | None) -> None:
    if action["op"] == "restart_worker":
        if worker is None:
            raise RuntimeError("this case has no worker to restart")
        args = action.get("args", {})
        worker.restart(hard=args.get("mode", "term") == "kill", listener=args.get("listener"))
    else:
        raise RuntimeError(f"unknown runner action {action['op']}")


def _record(
    log_dir: Path,
    sdk: str,
    prepared: PreparedCase,
    exchange: Exchange,
    observations: dict[str, Any],
    result: dict[str, Any],
) -> None:
    """Appends the raw exchange to ``logs/<sdk>-cases.jsonl`` for post-mortems.

    The instruction holds no bearer (those travel on the bearer pipe), so
    the log is safe to keep and to attach to a bug report.
    """
    record = {
        "instruction": prepared.instruction,
        "status": exchange.status,
        "detail": exchange.detail,
        "result": result,
        "worker": observations,
    }
    with open(log_dir / f"{sdk}-cases.jsonl", "a") as out:
        out.write(json.dumps(record) + "\n")
