"""Runs the SDK columns of one run: one after another, or several at a time.

Serial columns share one ``Suite``, so each worker configuration starts once for
the whole run. Parallel columns cannot share workers: a worker's fault plan is
armed for one case at a time, so two cases on one worker would see each other's
faults and observations. Each parallel column therefore gets a suite of its own:
its own workers (each on an ephemeral port of its own), its own scratch folder
and its own logs under ``logs/<sdk>/``. Cross-SDK cases need every client at
once; they run after the columns, serially, in a suite of their own
(``logs/cross/``). The merged verdict lists results in client order whatever
order the columns finish in, so the matrix reads the same either way.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import sdks
from .catalogue import Case
from .results import CaseResult, RunVerdict
from .runner import Options, Suite

log = logging.getLogger("colossus_conformance")


def default_jobs() -> int:
    """How many columns run at once by default: one per CPU this process may use."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus)


def run(
    all_cases: list[Case],
    selected: list[Case],
    clients: list[sdks.ClientSpec],
    options: Options,
    jobs: int = 1,
) -> RunVerdict:
    """Runs ``selected`` for every client (``jobs`` columns at a time) and merges the verdicts."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    merged = RunVerdict([])
    if not clients:
        merged.problems.append("no SDK has a conformance client")
        return merged
    if not selected:
        merged.problems.append("the selection matched no case")
        return merged
    all_ids = [c.id for c in all_cases]
    if jobs == 1 or len(clients) == 1:
        return _serial(selected, clients, options, all_ids)
    return _parallel(selected, clients, options, all_ids, jobs)


def _serial(
    selected: list[Case], clients: list[sdks.ClientSpec], options: Options, all_ids: list[str]
) -> RunVerdict:
    merged = RunVerdict([])
    suite = Suite(selected, options)
    try:
        for spec in clients:
            sdks.build(spec)
            verdict = suite.run_sdk(spec, all_ids)
            merged.results.extend(verdict.results)
            merged.problems.extend(verdict.problems)
        # Cross-SDK cases need two or more clients; with one they are simply not run.
        merged.results.extend(suite.run_cross(clients).results)
    finally:
        suite.close()
    return merged


def _parallel(
    selected: list[Case],
    clients: list[sdks.ClientSpec],
    options: Options,
    all_ids: list[str],
    jobs: int,
) -> RunVerdict:
    # Builds write into the client folders; finish them all before any column starts.
    for spec in clients:
        sdks.build(spec)
    logs = options.results_dir / "logs"
    shared = dataclasses.replace(options, on_result=_serialised(options.on_result))
    cancelled = threading.Event()
    log.info(
        "running %d columns, %d at a time; each column's logs are under %s/<sdk>/",
        len(clients),
        min(jobs, len(clients)),
        logs,
    )

    def column(spec: sdks.ClientSpec) -> RunVerdict:
        started = time.monotonic()
        suite = _suite(selected, shared, logs / spec.sdk)
        try:
            verdict = suite.run_sdk(spec, all_ids, stop=lambda _result: cancelled.is_set())
        finally:
            suite.close()
        tally = Counter(r.status for r in verdict.results)
        summary = ", ".join(f"{n} {status.lower()}" for status, n in sorted(tally.items()))
        log.info("[%s] column finished in %.0fs: %s", spec.sdk, time.monotonic() - started, summary)
        return verdict

    merged = RunVerdict([])
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="column") as pool:
        futures = [pool.submit(column, spec) for spec in clients]
        try:
            verdicts = [f.result() for f in futures]
        except BaseException:
            # Ctrl-C or a runner error: let the other columns stop after their current case.
            cancelled.set()
            raise
    for verdict in verdicts:
        merged.results.extend(verdict.results)
        merged.problems.extend(verdict.problems)
    cross_suite = _suite(selected, shared, logs / "cross")
    try:
        merged.results.extend(cross_suite.run_cross(clients).results)
        merged.problems.extend(cross_suite._scan_worker_logs())
    finally:
        cross_suite.close()
    return merged


def _suite(selected: list[Case], options: Options, log_dir: Path) -> Suite:
    """A suite of its own (workers, scratch) whose logs go to ``log_dir``."""
    suite = Suite(selected, options)
    suite.log_dir = log_dir  # workers and clients start later, so they all log here
    log_dir.mkdir(parents=True, exist_ok=True)
    return suite


def _serialised(
    on_result: Callable[[CaseResult], None] | None,
) -> Callable[[CaseResult], None] | None:
    """The progress callback, called by one column at a time so lines never interleave."""
    if on_result is None:
        return None
    lock = threading.Lock()

    def report(result: CaseResult) -> None:
        with lock:
            on_result(result)

    return report
