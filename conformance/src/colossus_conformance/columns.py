"""Runs the SDK columns of one run: one after another, or several runners at a time.

Serial columns (``--jobs 1``) share one ``Suite``, so each worker configuration
starts once for the whole run. Parallel runners cannot share workers: a worker's
fault plan is armed for one case at a time, so two cases on one worker would see
each other's faults and observations. Each runner therefore gets a suite of its
own: its own client process, its own workers (each on an ephemeral port of its
own), its own scratch folder and its own logs (``logs/<sdk>/`` for a column's
first runner, ``logs/<sdk>/runner-<n>/`` for the others). With ``jobs`` at least
twice the number of columns, each column gets ``jobs // columns`` runners that
take their cases from one queue (``case_queue``). Cross-SDK cases need every
client at once; they run after the columns, serially, in a suite of their own
(``logs/cross/``). The merged verdict lists each column's results in suite order
and the columns in client order, whatever order the runners finish in, so the
matrix reads the same either way.
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
from .bearer_leaks import contains_secret, read_from
from .case_queue import CaseQueue, longest_first, order_cases
from .catalogue import Case
from .enrolment_templates import EnrolmentTemplates
from .results import NOT_RUN, CaseResult, RunVerdict
from .runner import Options, Suite

log = logging.getLogger("colossus_conformance")


def default_jobs() -> int:
    """How many runners work at once by default: five per CPU this process may use.

    A runner spends most of its time waiting (on worker restarts and start-ups, time-outs,
    a sidecar's crash loop, client round trips): in CI's run of the five-column matrix on
    2 CPUs, one runner per column used 0.75 of a CPU in all (278 CPU-seconds in 372 s,
    with its Python bytecode cached). Five runners per CPU gives every column of the
    five-column matrix (four SDKs, Python twice) two runners on two CPUs.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus) * RUNNERS_PER_CPU


RUNNERS_PER_CPU = 5


def runners_per_column(jobs: int, columns: int) -> int:
    """How many runners share each column: ``jobs`` runners spread over the columns."""
    return max(1, jobs // max(1, columns))


def run(
    all_cases: list[Case],
    selected: list[Case],
    clients: list[sdks.ClientSpec],
    options: Options,
    jobs: int = 1,
) -> RunVerdict:
    """Runs ``selected`` for every client (``jobs`` runners at a time) and merges the verdicts."""
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
    if jobs == 1:
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


def _build_all(clients: list[sdks.ClientSpec]) -> None:
    """Builds every client at once (each writes only its own tree) before any column starts."""
    with ThreadPoolExecutor(max_workers=max(1, len(clients)), thread_name_prefix="build") as pool:
        for future in [pool.submit(sdks.build, spec) for spec in clients]:
            future.result()


def _parallel(
    selected: list[Case],
    clients: list[sdks.ClientSpec],
    options: Options,
    all_ids: list[str],
    jobs: int,
) -> RunVerdict:
    _build_all(clients)
    logs = options.results_dir / "logs"
    templates = EnrolmentTemplates(options.scratch, logs / "enrolment")
    try:
        shared = dataclasses.replace(options, on_result=_serialised(options.on_result), templates=templates)
        return _run_runners(selected, clients, shared, all_ids, jobs, logs, templates)
    finally:
        templates.close()


def _run_runners(
    selected: list[Case],
    clients: list[sdks.ClientSpec],
    shared: Options,
    all_ids: list[str],
    jobs: int,
    logs: Path,
    templates: EnrolmentTemplates,
) -> RunVerdict:
    cancelled = threading.Event()
    per_column = runners_per_column(jobs, len(clients))
    order = {c.id: i for i, c in enumerate(order_cases(selected))}
    queues = {spec.sdk: CaseQueue(longest_first(order_cases(selected))) for spec in clients}
    log.info(
        "running %d columns, %d runner(s) each, %d runner(s) at a time; "
        "each column's logs are under %s/<sdk>/ (runner n > 1: <sdk>/runner-n/)",
        len(clients),
        per_column,
        min(jobs, len(clients) * per_column),
        logs,
    )

    def runner(spec: sdks.ClientSpec, number: int) -> RunVerdict:
        folder = logs / spec.sdk if number == 1 else logs / spec.sdk / f"runner-{number}"
        suite = Suite(selected, shared, log_dir=folder)
        try:
            return suite.run_sdk(
                spec, all_ids, stop=lambda _result: cancelled.is_set(), queue=queues[spec.sdk]
            )
        finally:
            suite.close()

    started = time.monotonic()
    work = [(spec, n) for n in range(1, per_column + 1) for spec in clients]
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="runner") as pool:
        futures = [(spec, pool.submit(runner, spec, n)) for spec, n in work]
        try:
            finished = [(spec, f.result()) for spec, f in futures]
        except BaseException:
            # Ctrl-C or a runner error: let the other runners stop after their current case.
            cancelled.set()
            raise

    merged = RunVerdict([])
    for spec in clients:
        column = [v for s, v in finished if s.sdk == spec.sdk]
        results = [r for v in column for r in v.results] + _not_run(spec, queues[spec.sdk], shared)
        results.sort(key=lambda r: order[r.case_id])
        merged.results.extend(results)
        for problem in (p for v in column for p in v.problems):
            if problem not in merged.problems:  # each runner checks the known-failure list
                merged.problems.append(problem)
        tally = Counter(r.status for r in results)
        summary = ", ".join(f"{n} {status.lower()}" for status, n in sorted(tally.items()))
        log.info("[%s] column: %s (columns done after %.0fs)", spec.sdk, summary, time.monotonic() - started)
    # The cross suite enrols only what the cross-SDK cases use.
    cross_suite = Suite([c for c in selected if c.cross_sdk], shared, log_dir=logs / "cross")
    try:
        merged.results.extend(cross_suite.run_cross(clients).results)
        merged.problems.extend(cross_suite.scan_worker_logs())
    finally:
        cross_suite.close()
    for log_path, bearers in templates.bearers_by_log().items():
        if contains_secret(read_from(log_path, 0), bearers):
            merged.problems.append(f"a bearer appeared in the enrolment log {log_path}")
    return merged


def _not_run(spec: sdks.ClientSpec, queue: CaseQueue, options: Options) -> list[CaseResult]:
    """The cases left in a column's queue once every one of its runners gave up."""
    left = [c for c in queue.drain() if not c.cross_sdk]
    reason = "; ".join(dict.fromkeys(queue.abandoned)) or "no runner took it"
    results = [
        CaseResult(
            spec.sdk, c.id, c.group, c.level, NOT_RUN, reason=reason, requirements=", ".join(c.requirements)
        )
        for c in left
    ]
    for result in results:
        if options.on_result:
            options.on_result(result)
    return results


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
