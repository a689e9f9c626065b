"""Drives every selected case through every selected SDK client: the suite's orchestration.

A ``Suite`` starts each worker configuration once, for the cases that need it, and runs
one client's column of cases (``run_sdk``) and the cross-SDK cases in every rotation of
roles (``run_cross``). Each case goes through ``case_execution``: prepared
(``case_preparation``), sent in segments (``segments``), observed (``observations``,
``sidecar_probes``) and judged (``judging``). Clients never judge; the runner does.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import known_failures
from .bearer_leaks import contains_secret, read_from
from .case_execution import run_case
from .case_queue import CaseQueue, order_cases
from .catalogue import Case
from .client_process import ClientProcess, Exchange
from .enrolment_templates import EnrolmentTemplates
from .results import NOT_RUN, SKIPPED, CaseResult, RunVerdict
from .sdks import ClientSpec
from .worker import DEFAULT_GRANT, ManagedWorker

log = logging.getLogger("colossus_conformance")


@dataclass
class Options:
    results_dir: Path
    known_failures_dir: Path
    scratch: Path | None = None
    timeout_scale: float = 1.0
    on_result: Callable[[CaseResult], None] | None = None
    # Shared by the runners of a parallel run: enrol once per configuration, copy after.
    templates: EnrolmentTemplates | None = None


class Suite:
    """Holds the workers shared by every SDK of one run.

    Its workers and clients log to ``log_dir`` (``<results>/logs`` unless a parallel run
    gives each runner a folder of its own).
    """

    def __init__(self, cases: list[Case], options: Options, log_dir: Path | None = None):
        self.cases = order_cases(cases)
        self.options = options
        self.scratch = Path(tempfile.mkdtemp(prefix="colossus-conformance-", dir=options.scratch))
        self.scratch.chmod(0o700)
        self.workers: dict[str, ManagedWorker] = {}
        self.broken: dict[str, str] = {}  # configuration -> why its worker cannot start
        self.log_dir = log_dir or options.results_dir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)

    # -- workers ---------------------------------------------------------------

    def applications(self, configuration: str) -> dict[str, dict[str, Any]]:
        """Every application the selected cases of one configuration use, with its grant."""
        apps: dict[str, dict[str, Any]] = {}
        for case in self.cases:
            if case.worker != configuration:
                continue
            for conn in case.connections:
                if conn.get("placement", "daemon") != "daemon":
                    continue
                app = conn.get("app", "full")
                grant = conn.get("grant", DEFAULT_GRANT)
                if app in apps and apps[app] != grant:
                    raise ValueError(f"application {app} is declared with two different grants")
                apps[app] = grant
        return apps

    def worker(self, configuration: str) -> ManagedWorker | None:
        if configuration == "none":
            return None
        if configuration in self.broken:
            raise RuntimeError(self.broken[configuration])
        existing = self.workers.get(configuration)
        if existing is not None and existing.alive:
            return existing
        if existing is not None:
            log.warning("worker %s died; restarting it", configuration)
            existing.start()
            return existing
        limits: dict[str, str] | None = {} if configuration == "default-limits" else None
        w = ManagedWorker(configuration, self.scratch, self.log_dir, limits)
        try:
            if self.options.templates is not None:
                self.options.templates.fill(w, self.applications(configuration), limits)
            else:
                for app, grant in sorted(self.applications(configuration).items()):
                    w.enrol(app, grant)
            w.start()
        except Exception as exc:
            w.stop()
            # Fail every later case of this configuration at once instead of
            # enrolling and starting again for each of them.
            self.broken[configuration] = f"worker {configuration!r} unavailable: {exc}"
            raise
        self.workers[configuration] = w
        return w

    def close(self) -> None:
        for w in self.workers.values():
            w.stop()
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- one SDK ---------------------------------------------------------------

    def run_sdk(
        self,
        spec: ClientSpec,
        all_case_ids: list[str],
        only: list[Case] | None = None,
        stop: Callable[[CaseResult], bool] | None = None,
        queue: CaseQueue | None = None,
    ) -> RunVerdict:
        """Runs the suite's cases (or ``only`` those, in suite order) through one client.

        ``stop`` ends the run early once it returns true for a result (the mutation
        harness stops at the first case that kills a mutant). With ``queue`` the cases
        come from that queue, shared with other runners of the same column; a runner
        whose client dies returns its case to the queue and stops taking more.
        """
        wanted = None if only is None else {c.id for c in only}
        entries = known_failures.load(self.options.known_failures_dir / f"{spec.sdk}.yaml", spec.sdk)
        problems = [
            f"{spec.sdk}: known-failure pattern {e.pattern!r} matches no case"
            for e in known_failures.dangling(entries, all_case_ids)
        ]
        results: list[CaseResult] = []
        client: ClientProcess | None = self._start_client(spec)
        dead_reason = "" if client else "client failed to start"
        for case in self.cases if queue is None else queue:
            if (wanted is not None and case.id not in wanted) or case.cross_sdk:
                continue
            if results and stop is not None and stop(results[-1]):
                if queue is not None:
                    queue.put_back(case)
                break
            if client is None and queue is not None:
                queue.put_back(case)
                queue.give_up(dead_reason)
                break
            if client is None:
                results.append(
                    self._emit(
                        CaseResult(
                            spec.sdk,
                            case.id,
                            case.group,
                            case.level,
                            NOT_RUN,
                            reason=dead_reason,
                            requirements=", ".join(case.requirements),
                        )
                    )
                )
                continue
            missing = [f for f in case.requires_features if f not in client.hello.get("features", [])]
            if missing:
                results.append(
                    self._emit(
                        CaseResult(
                            spec.sdk,
                            case.id,
                            case.group,
                            case.level,
                            SKIPPED,
                            reason=f"client lacks {', '.join(missing)}",
                            requirements=", ".join(case.requirements),
                        )
                    )
                )
                continue
            result, exchange = self.run_case(client, case, spec.sdk)
            result = known_failures.reconcile(result, entries)
            results.append(self._emit(result))
            if exchange.status == "timeout":
                client.kill()
                client = self._start_client(spec)
                dead_reason = "client could not be restarted after a timeout"
            elif exchange.status in ("crashed", "protocol_error"):
                client.kill()
                client = None
                dead_reason = f"client crashed during {case.id}"
        if client is not None:
            client.stop()
        problems.extend(self.scan_worker_logs())
        return RunVerdict(results, problems)

    def run_cross(self, specs: list[ClientSpec]) -> RunVerdict:
        """Runs the cross-SDK cases with every client present, in every rotation of roles.

        Rotation ``i`` gives role A to client ``i``, B to ``i + 1`` and C to ``i + 2``
        (modulo the number of clients), so with two clients each plays every role.
        """
        cases = [c for c in self.cases if c.cross_sdk]
        if len(specs) < 2 or not cases:
            return RunVerdict([])
        processes: dict[str, ClientProcess | None] = {s.sdk: self._start_client(s) for s in specs}
        results: list[CaseResult] = []
        try:
            for case in cases:
                for i in range(len(specs)):
                    names = {r: specs[(i + k) % len(specs)].sdk for k, r in enumerate("ABC")}
                    column = f"cross({names['A']},{names['B']},{names['C']})"
                    roles = {r: processes[n] for r, n in names.items()}
                    live = {r: p for r, p in roles.items() if p is not None}
                    if len(live) != len(roles):
                        results.append(
                            self._emit(
                                CaseResult(
                                    column, case.id, case.group, case.level, NOT_RUN, reason="a client died"
                                )
                            )
                        )
                        continue
                    result, exchange = self.run_case(live["A"], case, column, roles=live)
                    results.append(self._emit(result))
                    if exchange.status != "ok":
                        for spec in specs:  # whichever client failed, start them all afresh
                            old = processes[spec.sdk]
                            if old is not None:
                                old.kill()
                            processes[spec.sdk] = self._start_client(spec)
        finally:
            for process in processes.values():
                if process is not None:
                    process.stop()
        return RunVerdict(results)

    def scan_worker_logs(self) -> list[str]:
        """Run-level C5/W3 check: no enrolled bearer in any worker's log."""
        problems = []
        for w in self.workers.values():
            bearers = [e.bearer for e in w.enrolments.values()]
            if contains_secret(read_from(w.log_path, 0), bearers):
                problems.append(f"a bearer appeared in the log of worker {w.name}")
        return problems

    def _emit(self, result: CaseResult) -> CaseResult:
        if self.options.on_result:
            self.options.on_result(result)
        return result

    def _start_client(self, spec: ClientSpec) -> ClientProcess | None:
        client = ClientProcess(
            list(spec.command), spec.folder, self.log_dir / f"client-{spec.sdk}.log", env=spec.env
        )
        try:
            client.start()
        except (OSError, RuntimeError) as exc:
            log.error("client %s did not start: %s", spec.sdk, exc)
            return None
        return client

    def run_case(
        self, client: ClientProcess, case: Case, sdk: str, roles: dict[str, ClientProcess] | None = None
    ) -> tuple[CaseResult, Exchange]:
        """Runs one case on this suite's workers; see ``case_execution.run_case``."""
        return run_case(
            client,
            case,
            sdk,
            workers=self.worker,
            scratch=self.scratch,
            log_dir=self.log_dir,
            timeout_scale=self.options.timeout_scale,
            roles=roles,
        )
