"""A kill -9 crash loop against a real worker (W12, W13), shared by test and benchmark.

Each iteration starts the worker on the same state folder, drives a concurrent
workload (create runs of three kinds, answer prompts, cancel runs), and kills
the process with SIGKILL at a random moment. After every restart it checks that
everything the worker had *acknowledged* is still there; at the end it lets
every run settle and checks that each one ended honestly:

* a run seen waiting for input at a crash ends ``INTERRUPTED`` (unless an
  in-flight answer had committed), never resumes silently;
* a run that started an external effect ends ``OUTCOME_UNKNOWN`` or finished,
  and the effect never starts twice;
* a queued or plain running run resumes and produces its output exactly once;
* an acknowledged answer is in the history as answered; an acknowledged cancel
  ends ``CANCELLED`` (or the run was already terminal);
* every idempotency key replays the run it created; sequences have no holes;
  the whole journal's hash chain verifies offline.
"""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from worker_harness import Client, Worker, enroll, private_dir, run_service_pb2, runs_pb2, script

TERMINAL = {5, 6, 7, 8, 9}
SUCCEEDED, CANCELLED, INTERRUPTED, OUTCOME_UNKNOWN, WAITING = 5, 7, 8, 9, 3
NO_LIMITS = [
    "--limit", "create_rate_per_second=10000", "--limit", "create_rate_burst=10000",
    "--limit", "create_rate_per_application_per_second=10000",
    "--limit", "create_rate_per_application_burst=10000",
    "--limit", "max_active_runs=10000", "--limit", "max_active_runs_per_application=10000",
]
SAY_STEPS = 40


def program(kind: str) -> str:
    if kind == "say":
        return script(*[f"say p{i};" for i in range(SAY_STEPS)])
    if kind == "ask":
        return script("say asking", "ask Proceed? | yes | no", "say answered")
    return script("say preparing", "effect", "sleep 150", "say effect done")


def expected_say_output() -> str:
    return "".join(f"p{i};" for i in range(SAY_STEPS))


@dataclass
class Ledger:
    """What the worker acknowledged to the clients, and what they saw before crashes."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    created: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (run_id, kind)
    answered: dict[str, str] = field(default_factory=dict)  # run_id -> interaction_id
    cancelled: dict[str, int] = field(default_factory=dict)  # run_id -> status in reply
    fresh: list[str] = field(default_factory=list)  # keys acknowledged this iteration


@dataclass
class CrashLoopReport:
    iterations: int = 0
    runs: int = 0
    answers: int = 0
    cancels: int = 0
    lost: int = 0
    problems: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    recovered: Counter[str] = field(default_factory=Counter)
    recovery_seconds: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def fail(self, message: str) -> None:
        self.problems.append(message)


_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _retry(call: Any, *args: Any) -> Any:
    """Checks must not mistake a slow moment on a loaded machine for a lost record."""
    for attempt in range(4):
        try:
            return call(*args)
        except grpc.RpcError as err:
            if err.code() not in _TRANSIENT or attempt == 3:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def _create(client: Client, key: str, kind: str) -> Any:
    req = run_service_pb2.CreateRunRequest(
        idempotency_key=key, input=[runs_pb2.InputPart(text=program(kind))])
    return client.runs.CreateRun(req, metadata=client.metadata, timeout=5)


def _workload(client: Client, ledger: Ledger, stop: threading.Event, rng: random.Random,
              prefix: str) -> None:
    n = 0
    while not stop.is_set():
        try:
            roll = rng.random()
            with ledger.lock:
                known = list(ledger.created.values())
            if roll < 0.55 or not known:
                n += 1
                key = f"{prefix}-{n}"
                kind = rng.choice(["say", "ask", "effect"])
                reply = _create(client, key, kind)
                with ledger.lock:
                    ledger.created[key] = (reply.run.run_id, kind)
                    ledger.fresh.append(key)
            elif roll < 0.85:
                asks = [r for r, k in known if k == "ask"]
                if not asks:
                    continue
                run_id = rng.choice(asks[-20:])
                run = client.get(run_id)
                if run.status != WAITING:
                    continue
                iid = run.pending_interaction.interaction_id
                req = run_service_pb2.RespondInteractionRequest(
                    run_id=run_id, interaction_id=iid,
                    prompt=run_service_pb2.PromptAnswer(choice="yes"))
                client.runs.RespondInteraction(req, metadata=client.metadata, timeout=5)
                with ledger.lock:
                    ledger.answered[run_id] = iid
            else:
                run_id = rng.choice(known[-20:])[0]
                run = client.cancel(run_id)
                with ledger.lock:
                    ledger.cancelled.setdefault(run_id, run.status)
        except grpc.RpcError:
            if stop.is_set():
                return
            time.sleep(0.005)  # refused or the worker is gone; keep going until told


def history(client: Client, run_id: str, last: int) -> list[Any]:
    """Events 1..last of a run."""
    if last == 0:
        return []
    events = []
    stream = client.watch(run_id, 0, timeout=10)
    for item in stream:
        events.append(item.event)
        if item.event.sequence >= last:
            stream.cancel()
            break
    return events


def _check_acknowledged(client: Client, ledger: Ledger, keys: list[str],
                        report: CrashLoopReport) -> None:
    for key in keys:
        run_id, kind = ledger.created[key]
        try:
            again = _retry(_create, client, key, kind)
        except grpc.RpcError as err:
            report.lost += 1
            report.fail(f"replay of {key} failed: {err.code()}")
            continue
        if not again.replayed or again.run.run_id != run_id:
            report.lost += 1
            report.fail(f"idempotency claim {key} lost (replayed={again.replayed})")


def _settle(client: Client, ledger: Ledger, report: CrashLoopReport, timeout: float) -> None:
    """Wait until no run is QUEUED, RUNNING or CANCELLING, then check each history."""
    deadline = time.monotonic() + timeout
    runs = {run_id: kind for run_id, kind in ledger.created.values()}
    final: dict[str, Any] = {}
    pending = set(runs)
    while pending and time.monotonic() < deadline:
        for run_id in list(pending):
            run = _retry(client.get, run_id)
            if run.status in TERMINAL or run.status == WAITING:
                final[run_id] = run
                pending.discard(run_id)
        if pending:
            time.sleep(0.05)
    for run_id in pending:
        report.fail(f"run {run_id} never settled (status {client.get(run_id).status})")
    for run_id, run in final.items():
        kind = runs[run_id]
        report.statuses[runs_pb2.RunStatus.Name(run.status)] += 1
        events = _retry(history, client, run_id, run.last_sequence)
        seqs = [e.sequence for e in events]
        if seqs != list(range(1, run.last_sequence + 1)):
            report.fail(f"{run_id}: sequence holes or repeats")
            continue
        kinds = [e.WhichOneof("payload") for e in events]
        if run.status in TERMINAL and (kinds[-1] != "terminated" or kinds.count("terminated") != 1):
            report.fail(f"{run_id}: terminal run without exactly one final terminated event")
        effects = [e for e in events if e.WhichOneof("payload") == "tool_activity"
                   and e.tool_activity.display_category == "external effect"
                   and e.tool_activity.phase == runs_pb2.TOOL_ACTIVITY_PHASE_STARTED]
        if len(effects) > 1:
            report.fail(f"{run_id}: the external effect started {len(effects)} times")
        if run.status == OUTCOME_UNKNOWN and not effects:
            report.fail(f"{run_id}: OUTCOME_UNKNOWN without a started effect")
        if kinds.count("interaction_requested") > 1:
            report.fail(f"{run_id}: a prompt was asked again after a restart")
        resolved = [e.interaction_resolved for e in events
                    if e.WhichOneof("payload") == "interaction_resolved"]
        if run.status == INTERRUPTED and not any(
                r.outcome == runs_pb2.INTERACTION_OUTCOME_INTERRUPTED for r in resolved):
            report.fail(f"{run_id}: INTERRUPTED without an interrupted interaction")
        if run_id in ledger.answered:
            iid = ledger.answered[run_id]
            if not any(r.interaction_id == iid and r.outcome == runs_pb2.INTERACTION_OUTCOME_ANSWERED
                       for r in resolved):
                report.lost += 1
                report.fail(f"{run_id}: acknowledged answer missing from the history")
        if run_id in ledger.cancelled:
            before = ledger.cancelled[run_id]
            if run.status != CANCELLED and before not in TERMINAL:
                report.lost += 1
                report.fail(f"{run_id}: acknowledged cancel ended {run.status}")
        if (kind == "say" and run.status == SUCCEEDED
                and run.result.output_text != expected_say_output()):
            report.fail(f"{run_id}: resumed output duplicated or lost")
        if kind == "say" and run.status in (INTERRUPTED, OUTCOME_UNKNOWN):
            report.fail(f"{run_id}: a plain run was not resumed")


def states_at_crash(state_dir: Path) -> dict[str, tuple[str, bool]]:
    """Each run's status and effect flag as the dead worker left them (read-only).

    Nothing changes between the kill and the restart, so this is an exact oracle
    for what recovery must do with every run that was not terminal.
    """
    out: dict[str, tuple[str, bool]] = {}
    # A plain connection (not mode=ro): reading a WAL database left by a killed
    # process may need to rebuild its shared-memory index, as the worker itself does.
    with contextlib.closing(sqlite3.connect(state_dir / "journal.sqlite3")) as db:
        rows = db.execute(
            "SELECT r.stream, r.version, r.payload FROM records r JOIN "
            "(SELECT stream, MAX(version) AS v FROM records WHERE stream LIKE 'run:%' "
            "GROUP BY stream) h ON r.stream = h.stream AND r.version = h.v")
        for stream, version, payload in rows:
            if version == 1:
                out[stream.removeprefix("run:")] = ("QUEUED", False)
                continue
            state = json.loads(payload)["state"]
            out[stream.removeprefix("run:")] = (state["status"], bool(state["effect"]))
    return out


def _check_recovery(client: Client, crashed: dict[str, tuple[str, bool]],
                    report: CrashLoopReport) -> None:
    """W13: how recovery must settle each run that was not terminal at the kill."""
    expect = {"WAITING_FOR_INPUT": INTERRUPTED, "CANCELLING": CANCELLED}
    for run_id, (status, effect) in crashed.items():
        if status in ("SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED", "OUTCOME_UNKNOWN"):
            continue
        report.recovered[status + (" after an effect" if effect else "")] += 1
        now = _retry(client.get, run_id).status
        if status == "RUNNING" and effect:
            if now != OUTCOME_UNKNOWN:
                report.fail(f"{run_id}: RUNNING after an effect recovered as {now}")
        elif status in expect:
            if now != expect[status]:
                report.fail(f"{run_id}: {status} at the crash recovered as {now}")
        elif now in (INTERRUPTED, OUTCOME_UNKNOWN):
            report.fail(f"{run_id}: {status} without an effect was not resumed ({now})")


def verify_journal(state_dir: Path, report: CrashLoopReport) -> int:
    """Walk every stream of the journal with full chain verification; returns records."""
    from colossus_reference_worker.errors import JournalIntegrityError
    from colossus_reference_worker.journal import Journal

    key = (state_dir / "journal-key").read_bytes()
    path = state_dir / "journal.sqlite3"
    with sqlite3.connect(path) as db:
        streams = [r[0] for r in db.execute("SELECT DISTINCT stream FROM records")]
    journal = Journal(path, key)
    total = 0
    try:
        for stream in streams:
            total += sum(1 for _ in journal.read_stream(stream))
    except JournalIntegrityError as exc:
        report.fail(f"journal chain broken: {exc}")
    finally:
        journal.close()
    return total


def run_crash_loop(workdir: Path, iterations: int = 30, seed: int = 7,
                   threads: int = 2) -> CrashLoopReport:
    rng = random.Random(seed)
    pub = private_dir(workdir / "pub-crash")
    bearer = enroll(pub, "crash-app")
    ledger = Ledger()
    report = CrashLoopReport()
    t0 = time.monotonic()
    crashed: dict[str, tuple[str, bool]] = {}
    for it in range(iterations):
        start = time.monotonic()
        worker = Worker.start(pub, *NO_LIMITS)
        report.recovery_seconds.append(time.monotonic() - start)
        client = worker.client(bearer)
        try:
            _check_recovery(client, crashed, report)
            with ledger.lock:
                fresh, ledger.fresh = ledger.fresh, []
            _check_acknowledged(client, ledger, fresh, report)
            stop = threading.Event()
            pool = [threading.Thread(target=_workload, args=(
                client, ledger, stop, random.Random(rng.random()), f"i{it}t{t}"))
                for t in range(threads)]
            for thread in pool:
                thread.start()
            time.sleep(rng.uniform(0.1, 0.45))
            worker.kill()
            stop.set()
            for thread in pool:
                thread.join(15)
        finally:
            client.close()
        crashed = states_at_crash(pub / "state")
        report.iterations += 1
    worker = Worker.start(pub, *NO_LIMITS)
    client = worker.client(bearer)
    try:
        _check_recovery(client, crashed, report)
        with ledger.lock:
            fresh, ledger.fresh = ledger.fresh, []
        _check_acknowledged(client, ledger, fresh, report)
        _settle(client, ledger, report, timeout=30)
    finally:
        client.close()
        worker.terminate()
    verify_journal(pub / "state", report)
    report.runs = len(ledger.created)
    report.answers = len(ledger.answered)
    report.cancels = len(ledger.cancelled)
    report.seconds = time.monotonic() - t0
    return report
