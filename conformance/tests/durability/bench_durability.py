"""Durability benchmark of the reference worker (W12, W13), printed as ratios.

Run through ``./noxw -s bench_durability`` (add ``-- --quick`` for a smoke run).
Every figure comes from real worker subprocesses over TLS, measured in one run:

1. append and cancel cost at event ~4,000 over the same at event ~10 (target <= 1.2):
   RespondInteraction (two appends plus the driver's next prompt) and CancelRun on
   runs that have released ~10 or ~4,000 events, interleaved so drift hits both;
2. ListRuns latency with 100,000 unrelated journal records over none (target <= 1.2);
3. start-up time after kill -9 with 1,000 runs in the journal (and with none);
4. start-up with 100,000 stored finished runs over an empty journal, alternating
   rounds, median and min-max of the per-round ratios (issue 12: <= 2);
5. a kill -9 crash loop: iterations and acknowledged records lost (target 0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crashloop import NO_LIMITS, run_crash_loop
from worker_harness import (
    Worker,
    enroll,
    private_dir,
    run_service_pb2,
    script,
)

WAITING = 3
BIG_LIMITS = [*NO_LIMITS, "--limit", "max_events_per_run=20000"]


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _wait_waiting(client, run_id: str, timeout: float = 120) -> object:
    deadline = time.monotonic() + timeout
    while True:
        run = client.get(run_id)
        if run.status == WAITING:
            return run
        if run.status in (5, 6, 7, 8, 9):
            raise RuntimeError(f"{run_id} ended (status {run.status}) instead of asking")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{run_id} never asked (status {run.status})")
        time.sleep(0.01)


def _respond(client, run) -> float:
    req = run_service_pb2.RespondInteractionRequest(
        run_id=run.run_id, interaction_id=run.pending_interaction.interaction_id,
        prompt=run_service_pb2.PromptAnswer(choice="a"))
    t0 = time.perf_counter()
    client.runs.RespondInteraction(req, metadata=client.metadata, timeout=10)
    return time.perf_counter() - t0


def bench_appends(root: Path, big_events: int, samples: int, cancels: int) -> dict[str, float]:
    pub = private_dir(root / "pub-append")
    bearer = enroll(pub, "bench")
    worker = Worker.start(pub, *BIG_LIMITS)
    try:
        with worker.client(bearer) as c:
            asks = [f"ask Q{i} | a | b" for i in range(min(samples + 2, 100))]
            # Each prompt is a turn: ask for the largest turn budget.
            small = c.create("small", script(*["say s"] * 8, *asks), max_turns=100).run
            big = c.create("big", script(f"repeat {big_events} say b", *asks),
                           max_turns=100).run
            runs = {"small": _wait_waiting(c, small.run_id),
                    "big": _wait_waiting(c, big.run_id)}
            at = {k: v.last_sequence for k, v in runs.items()}
            times: dict[str, list[float]] = {"small": [], "big": []}
            _respond(c, runs["small"])  # warm both paths once
            _respond(c, runs["big"])
            for i in range(samples):
                order = ("small", "big") if i % 2 else ("big", "small")
                for name in order:
                    run = _wait_waiting(c, runs[name].run_id)
                    times[name].append(_respond(c, run))
            # Cancel: one fresh waiting run of each size per round, created only once
            # the previous round is done (so no run is busy while another is timed),
            # cancelled in alternating order.
            cancel_at = {"small": 0, "big": 0}
            cancel_times: dict[str, list[float]] = {"small": [], "big": []}
            for i in range(cancels):
                fresh = {
                    "small": c.create(f"cs{i}", script(*["say s"] * 8, "ask Q | a | b")).run,
                    "big": c.create(f"cb{i}", script(f"repeat {big_events} say b",
                                                     "ask Q | a | b")).run,
                }
                waiting = {name: _wait_waiting(c, run.run_id) for name, run in fresh.items()}
                for name in (("small", "big") if i % 2 else ("big", "small")):
                    cancel_at[name] = waiting[name].last_sequence
                    t0 = time.perf_counter()
                    c.cancel(waiting[name].run_id)
                    cancel_times[name].append(time.perf_counter() - t0)
    finally:
        worker.terminate()
    return {
        "respond_small_at": at["small"], "respond_big_at": at["big"],
        "respond_small_ms": _median_ms(times["small"]),
        "respond_big_ms": _median_ms(times["big"]),
        "cancel_small_at": cancel_at["small"], "cancel_big_at": cancel_at["big"],
        "cancel_small_ms": _median_ms(cancel_times["small"]),
        "cancel_big_ms": _median_ms(cancel_times["big"]),
    }


def _list_once(client) -> float:
    t0 = time.perf_counter()
    page = client.runs.ListRuns(run_service_pb2.ListRunsRequest(page_size=3),
                                metadata=client.metadata, timeout=10)
    if page.next_page_token:  # a second page exercises the token path too
        client.runs.ListRuns(
            run_service_pb2.ListRunsRequest(page_size=3, page_token=page.next_page_token),
            metadata=client.metadata, timeout=10)
    return time.perf_counter() - t0


def add_noise(state_dir: Path, records: int) -> None:
    """Append ``records`` journal records to streams no listing ever reads."""
    from colossus_reference_worker.journal import Journal

    journal = Journal(state_dir / "journal.sqlite3", (state_dir / "journal-key").read_bytes())
    try:
        per_stream = 100
        with journal.transaction():
            for s in range(records // per_stream):
                prev = None
                stream = f"bench-noise:{s}"
                for v in range(1, per_stream + 1):
                    prev = journal.append(stream, v, "bench.noise",
                                          {"n": v, "pad": "x" * 64}, prev)
    finally:
        journal.close()


def _listing_state(pub: Path, runs: int) -> str:
    bearer = enroll(pub, "lister")
    worker = Worker.start(pub, *NO_LIMITS)
    try:
        with worker.client(bearer) as c:
            ids = [c.create(f"l{i}", script("say listed")).run.run_id for i in range(runs)]
            for run_id in ids:
                c.wait_status(run_id, {5})
    finally:
        worker.terminate()
    return bearer


def bench_list(root: Path, noise: int, runs: int, rounds: int) -> dict[str, float]:
    """Two workers with the same runs, one journal also holding ``noise`` unrelated
    records; ListRuns calls alternate between them so machine drift hits both."""
    plain_pub = private_dir(root / "pub-list-plain")
    noisy_pub = private_dir(root / "pub-list-noisy")
    plain_bearer = _listing_state(plain_pub, runs)
    noisy_bearer = _listing_state(noisy_pub, runs)
    add_noise(noisy_pub / "state", noise)
    plain = Worker.start(plain_pub, *NO_LIMITS)
    noisy = Worker.start(noisy_pub, *NO_LIMITS)
    times: dict[str, list[float]] = {"plain": [], "noisy": []}
    try:
        with plain.client(plain_bearer) as pc, noisy.client(noisy_bearer) as nc:
            for i in range(rounds + 5):
                order = (("plain", pc), ("noisy", nc))
                for name, client in (order if i % 2 else order[::-1]):
                    took = _list_once(client)
                    if i >= 5:
                        times[name].append(took)
    finally:
        plain.terminate()
        noisy.terminate()
    return {"list_none_ms": _median_ms(times["plain"]),
            "list_noise_ms": _median_ms(times["noisy"])}


def bench_recovery(root: Path, runs: int) -> dict[str, float]:
    empty = private_dir(root / "pub-empty")
    t0 = time.monotonic()
    Worker.start(empty).terminate()
    empty_start = time.monotonic() - t0
    pub = private_dir(root / "pub-recovery")
    bearer = enroll(pub, "recover")
    worker = Worker.start(pub, *NO_LIMITS)
    with worker.client(bearer) as c:
        for i in range(runs):
            kind = i % 10
            if kind == 0:
                text = script("say waiting", "ask Q | a | b")  # -> INTERRUPTED
            elif kind == 1:
                text = script("effect", "sleep 600000")  # -> OUTCOME_UNKNOWN
            elif kind == 2:
                text = script("sleep 600000")  # RUNNING, no effect -> resumes
            else:
                text = script("say done")  # SUCCEEDED before the kill
            c.create(f"r{i}", text)
        time.sleep(1.0)
    worker.kill()
    t0 = time.monotonic()
    worker = Worker.start(pub, *NO_LIMITS, timeout=120)
    recovered = time.monotonic() - t0
    worker.terminate()
    return {"recovery_runs": runs, "recovery_s": recovered, "empty_start_s": empty_start}


def add_finished_runs(state_dir: Path, template_run_id: str, count: int) -> None:
    """Store ``count`` more finished runs, cloned from one the worker ran: each with
    its run stream, idempotency claim and owner-index entry, as CreateRun writes them."""
    import json as _json

    from colossus_reference_worker.journal import Journal

    journal = Journal(state_dir / "journal.sqlite3", (state_dir / "journal-key").read_bytes())
    try:
        template = list(journal.read_stream(f"run:{template_run_id}"))
        creation = template[0].payload
        app = creation["application_id"]
        owner = journal.head(f"owner:{app}")
        with journal.transaction():
            for i in range(count):
                run_id = f"{template_run_id[:40]}c{i:08d}"
                key = f"bulk-{i}"
                prev = None
                for rec in template:
                    payload = _json.loads(rec.payload_text.replace(template_run_id, run_id))
                    if rec.version == 1:
                        payload["idempotency_key"] = key
                    prev = journal.append(f"run:{run_id}", rec.version, rec.kind, payload, prev)
                journal.append(f"idem:{app}:{key}", 1, "idempotency.claimed",
                               {"run_id": run_id, "fingerprint": creation["fingerprint"]}, None)
                owner = journal.append(f"owner:{app}", 1 if owner is None else owner.version + 1,
                                       "owner.indexed",
                                       {"run_id": run_id, "time": creation["create_time"]}, owner)
    finally:
        journal.close()


def bench_startup(root: Path, stored: int, rounds: int) -> list[float]:
    """Start-up time with ``stored`` finished runs over an empty journal, per round
    (graceful stops, the two workers alternating)."""
    empty = private_dir(root / "pub-start-empty")
    full = private_dir(root / "pub-start-full")
    enroll(empty, "starter")
    bearer = enroll(full, "starter")
    worker = Worker.start(full, *NO_LIMITS)
    with worker.client(bearer) as c:
        template = c.create("template", script("say stored")).run.run_id
        c.wait_status(template, {5})
    worker.terminate()
    add_finished_runs(full / "state", template, stored)

    def start(pub: Path) -> float:
        t0 = time.monotonic()
        w = Worker.start(pub, *NO_LIMITS, timeout=300)
        took = time.monotonic() - t0
        w.terminate()
        return took

    start(empty), start(full)  # warm the page cache for both
    ratios = []
    for i in range(rounds):
        if i % 2:
            tf, te = start(full), start(empty)
        else:
            te, tf = start(empty), start(full)
        ratios.append(tf / te)
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    quick = args.quick
    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="cbench-") as tmp:
        root = Path(tmp)
        ap = bench_appends(root, big_events=400 if quick else 4000,
                           samples=10 if quick else 80, cancels=4 if quick else 20)
        ls = bench_list(root, noise=10_000 if quick else 100_000, runs=20,
                        rounds=20 if quick else 100)
        rc = bench_recovery(root, runs=100 if quick else 1000)
        stored = 10_000 if quick else 100_000
        su = bench_startup(root, stored, rounds=4 if quick else 8)
        cl = run_crash_loop(root / "crash", iterations=5 if quick else 30, seed=99)

    respond_ratio = ap["respond_big_ms"] / ap["respond_small_ms"]
    cancel_ratio = ap["cancel_big_ms"] / ap["cancel_small_ms"]
    list_ratio = ls["list_noise_ms"] / ls["list_none_ms"]
    print("== bench_durability" + (" (quick sizes)" if quick else ""))
    # What else the machine was doing: every figure is only as quiet as this.
    print("load average (1, 5, 15 min) at start: " + ", ".join(f"{v:.2f}" for v in load_at_start)
          + "; at end: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"respond (append) at event {ap['respond_big_at']}: {ap['respond_big_ms']:.2f} ms, "
          f"at event {ap['respond_small_at']}: {ap['respond_small_ms']:.2f} ms "
          f"-> ratio {respond_ratio:.2f} (target <= 1.2)")
    print(f"cancel at event {ap['cancel_big_at']}: {ap['cancel_big_ms']:.2f} ms, "
          f"at event {ap['cancel_small_at']}: {ap['cancel_small_ms']:.2f} ms "
          f"-> ratio {cancel_ratio:.2f} (target <= 1.2)")
    print(f"ListRuns (2 pages) with {10_000 if quick else 100_000} unrelated records: "
          f"{ls['list_noise_ms']:.2f} ms, with none: {ls['list_none_ms']:.2f} ms "
          f"-> ratio {list_ratio:.2f} (target <= 1.2)")
    print(f"start-up after kill -9 with {rc['recovery_runs']} runs in the journal: "
          f"{rc['recovery_s']:.2f} s (empty state: {rc['empty_start_s']:.2f} s)")
    print(f"start-up with {stored:,} stored finished runs / empty journal: ratio median "
          f"{statistics.median(su):.2f} (min {min(su):.2f}, max {max(su):.2f}, {len(su)} "
          f"alternating rounds; target <= 2)")
    print(f"crash loop: {cl.iterations} kill -9 iterations, {cl.runs} runs, "
          f"{cl.answers} answers, {cl.cancels} cancels acknowledged; records lost: {cl.lost}; "
          f"other problems: {len(cl.problems)}; {cl.seconds:.1f} s")
    for problem in cl.problems[:10]:
        print(f"  problem: {problem}")
    return 0 if cl.lost == 0 and not cl.problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
