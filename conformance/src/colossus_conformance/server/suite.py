"""Runs the server catalogue against one worker: two workers at most, cases side by side.

The shared worker (the suite's raised create limits when the manifest allows it) serves
every case that leaves the worker running, many at once on one event loop; the lifecycle
worker (the worker's own limits) serves the ``alone`` cases one after another, since they
stop, kill or drain it. Both are enrolled and started in parallel, once.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..results import FAIL, NOT_APPLICABLE, PASS, SKIPPED, CaseResult, RunVerdict
from ..worker import ALL_SCOPES, SUITE_LIMITS, WorkerError
from .catalogue import CaseFailed, ServerCase
from .context import CaseContext
from .daemon import DaemonWorker
from .manifest import WorkerManifest

log = logging.getLogger("colossus_conformance.server")

# Applications of the shared worker and their exact scopes (W3). Cases that need a listing
# of their own use pages-a or pages-b; the narrow grants prove the per-RPC scopes (W4).
SHARED_APPLICATIONS: dict[str, tuple[str, ...]] = {
    "alpha": ALL_SCOPES,
    "beta": ALL_SCOPES,
    "pages-a": ALL_SCOPES,
    "pages-b": ALL_SCOPES,
    "writer": ("runs:execute",),
    "reader": ("runs:read",),
    "prompter": ("runs:execute", "runs:read", "prompts:respond"),
    "approver": ("runs:execute", "runs:read", "approvals:respond"),
}
LIFECYCLE_APPLICATIONS: dict[str, tuple[str, ...]] = {"durable": ALL_SCOPES, "throttled": ALL_SCOPES}
# Only the advertised create buckets and active-run caps are raised on the shared worker.
SHARED_LIMITS = {k: v for k, v in SUITE_LIMITS.items() if k.startswith(("create_rate", "max_active_runs"))}
CASE_SECONDS = 60.0
# A worker whose limits the runner cannot raise makes cases wait for its create buckets.
SLOW_CASE_SECONDS = 300.0
CONCURRENCY = 12


@dataclass(frozen=True)
class Options:
    scratch: Path
    log_dir: Path
    h2spec: str | None = None
    on_result: Callable[[CaseResult], None] | None = None


def _result(
    manifest: WorkerManifest,
    case: ServerCase,
    status: str,
    seconds: float = 0.0,
    details: Sequence[str] = (),
    reason: str = "",
) -> CaseResult:
    return CaseResult(
        sdk=manifest.name,
        case_id=case.id,
        group=case.group,
        level="REQUIRED",
        status=status,
        seconds=seconds,
        details=list(details),
        reason=reason,
        requirements=", ".join(case.requirements),
    )


def not_runnable(manifest: WorkerManifest, case: ServerCase, h2spec: str | None) -> CaseResult | None:
    """N/A for a capability the manifest lacks; skipped for a missing tool; None when runnable."""
    missing = [c for c in case.needs if not manifest.has(c)]
    if missing:
        return _result(manifest, case, NOT_APPLICABLE, reason=f"the worker lacks {', '.join(missing)}")
    if case.tool == "h2spec" and not h2spec:
        return _result(manifest, case, SKIPPED, reason="no h2spec binary given (--h2spec)")
    return None


async def run_case(
    manifest: WorkerManifest, case: ServerCase, worker: DaemonWorker, h2spec: str | None
) -> CaseResult:
    ctx = CaseContext(worker, h2spec)
    started = time.monotonic()
    budget = CASE_SECONDS if manifest.has("limits.configurable") else SLOW_CASE_SECONDS
    try:
        await asyncio.wait_for(case.run(ctx), budget)
        status, details = PASS, []
    except CaseFailed as exc:
        status, details = FAIL, [str(exc)]
    except asyncio.TimeoutError:
        status, details = FAIL, [f"no verdict within {budget:.0f} s"]
    except Exception as exc:
        status, details = FAIL, [f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=3)]
    finally:
        ctx.close()
    if not worker.alive and not case.alone:
        details.append(f"the worker exited during the case; see {worker.log_path}")
        status = FAIL
    return _result(manifest, case, status, time.monotonic() - started, details)


def _prepare(worker: DaemonWorker, applications: dict[str, tuple[str, ...]]) -> DaemonWorker:
    worker.enrol_all(applications)
    worker.start()
    return worker


async def _run_all(
    manifest: WorkerManifest,
    shared: list[ServerCase],
    alone: list[ServerCase],
    workers: dict[str, DaemonWorker],
    options: Options,
) -> list[CaseResult]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(case: ServerCase, worker: DaemonWorker) -> CaseResult:
        async with gate:
            result = await run_case(manifest, case, worker, options.h2spec)
        if options.on_result:
            options.on_result(result)
        return result

    async def serially() -> list[CaseResult]:
        results = []
        for case in alone:
            worker = workers["lifecycle"]
            if not worker.alive:
                await asyncio.to_thread(worker.start)
            results.append(await run_case(manifest, case, worker, options.h2spec))
            if options.on_result:
                options.on_result(results[-1])
        return results

    alone_results, shared_results = await asyncio.gather(
        serially(), asyncio.gather(*(one(c, workers["shared"]) for c in shared))
    )
    return [*shared_results, *alone_results]


def run(manifest: WorkerManifest, cases: list[ServerCase], options: Options) -> RunVerdict:
    """Every case of ``cases`` against the worker of ``manifest``; results in catalogue order."""
    results: dict[str, CaseResult] = {}
    runnable: list[ServerCase] = []
    for case in cases:
        verdict = not_runnable(manifest, case, options.h2spec)
        if verdict is None:
            runnable.append(case)
        else:
            results[case.id] = verdict
    shared = [c for c in runnable if not c.alone]
    alone = [c for c in runnable if c.alone]
    limits = SHARED_LIMITS if manifest.has("limits.configurable") else {}
    plans = {}
    if shared:
        plans["shared"] = (
            DaemonWorker(manifest, "shared", options.scratch, options.log_dir, limits),
            SHARED_APPLICATIONS,
        )
    if alone:
        plans["lifecycle"] = (
            DaemonWorker(manifest, "lifecycle", options.scratch, options.log_dir),
            LIFECYCLE_APPLICATIONS,
        )
    problems: list[str] = []
    workers: dict[str, DaemonWorker] = {}
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {name: pool.submit(_prepare, w, apps) for name, (w, apps) in plans.items()}
            for name, future in futures.items():
                workers[name] = future.result()
        for result in asyncio.run(_run_all(manifest, shared, alone, workers, options)):
            results[result.case_id] = result
    except WorkerError as exc:
        problems.append(str(exc))
    finally:
        for worker, _ in plans.values():
            try:
                worker.stop()
            except WorkerError as exc:
                problems.append(str(exc))
    ordered = [results[c.id] for c in cases if c.id in results]
    return RunVerdict(results=ordered, problems=problems)
