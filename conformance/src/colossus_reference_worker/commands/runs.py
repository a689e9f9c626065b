"""``runs list | show RUN_ID | watch RUN_ID``: a run's story, read from the state folder.

Every read is the journal's own verified read (:mod:`.snapshot` explains why the
state folder is read directly and how nothing is written to it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..engine.model import TERMINAL
from ..engine.runs import FullRun, RunStore
from ..engine.validation import OPAQUE_ID
from ..errors import JournalIntegrityError
from .common import EXIT_INTEGRITY, NotFound, UsageError, emit, fail, wants_json
from .snapshot import JOURNAL_FILE, ReadOnlyJournal, open_read_only

_TEXT_PREVIEW = 60


def _store(journal: ReadOnlyJournal) -> RunStore:
    return RunStore(journal, max_events=0, reserved=0)  # budgets only matter when appending


def _iso(time_us: int) -> str:
    moment = datetime.datetime.fromtimestamp(time_us / 1e6, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _check_run_id(run_id: str) -> None:
    if not OPAQUE_ID.fullmatch(run_id):
        raise UsageError(f"RUN_ID must be 1-64 characters of [A-Za-z0-9_-], got {run_id!r}")


def _summary(creation: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    created, updated = creation["create_time"], state["update_time"]
    return {
        "run_id": creation["run_id"],
        "application_id": creation["application_id"],
        "status": state["status"],
        "events": state["last_sequence"],
        "create_time": _iso(created),
        "update_time": _iso(updated),
        "duration_seconds": round((updated - created) / 1e6, 3),
    }


# --- runs list ---------------------------------------------------------------------------


def run_list(args: argparse.Namespace, state_dir: Path) -> int:
    if args.application is not None and not OPAQUE_ID.fullmatch(args.application):
        raise UsageError("--application expects an application ID of 1-64 characters of "
                         f"[A-Za-z0-9_-], got {args.application!r}")
    statuses = set(args.status)
    damaged: list[str] = []
    with open_read_only(state_dir) as (journal, _serving):
        store = _store(journal)
        rows: list[dict[str, Any]] = []
        for run_id in store.all_run_ids():
            try:
                tail = store.tail(run_id)
            except JournalIntegrityError:
                damaged.append(run_id)
                rows.append({"run_id": run_id, "status": "UNREADABLE"})
                continue
            assert tail is not None
            row = _summary(tail.creation, tail.state)
            if args.application and row["application_id"] != args.application:
                continue
            if statuses and row["status"] not in statuses:
                continue
            rows.append(row)
    if wants_json(args):
        for row in rows:
            print(json.dumps(row))
    else:
        if rows:
            print(f"{'RUN ID':<26} {'APPLICATION':<16} {'STATUS':<18} {'EVENTS':>6}  CREATED")
        for row in rows:
            print(f"{row['run_id']:<26} {row.get('application_id', '?'):<16} "
                  f"{row['status']:<18} {row.get('events', '?'):>6}  "
                  f"{row.get('create_time', '?')}")
    if damaged:
        fail(f"{len(damaged)} run(s) failed journal verification: {', '.join(damaged)}; "
             "run `journal verify` for details")
        return EXIT_INTEGRITY
    return 0


# --- runs show ---------------------------------------------------------------------------


def _full(store: RunStore, run_id: str, state_dir: Path) -> FullRun:
    full = store.full(run_id)
    if full is None:
        raise NotFound(f"no run {run_id!r} in {state_dir} (see `runs list`)")
    return full


def _event_row(payload: dict[str, Any]) -> dict[str, Any]:
    return {"sequence": payload["seq"], "time": _iso(payload["time"]), "event": payload["event"]}


def _describe(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind == "status":
        return f"status {event['previous']} -> {event['status']}"
    if kind == "output":
        text = event["text"]
        preview = text if len(text) <= _TEXT_PREVIEW else text[:_TEXT_PREVIEW] + "..."
        return f"output {json.dumps(preview)}"
    if kind == "terminated":
        return f"terminated {event['status']}"
    rest = {k: v for k, v in event.items() if k != "type"}
    return f"{kind} {json.dumps(rest, sort_keys=True)}"


def _print_event(args: argparse.Namespace, payload: dict[str, Any]) -> None:
    row = _event_row(payload)
    if wants_json(args):
        print(json.dumps(row), flush=True)
    else:
        print(f"{row['sequence']:>5}  {row['time']}  {_describe(row['event'])}", flush=True)


def run_show(args: argparse.Namespace, state_dir: Path) -> int:
    _check_run_id(args.run_id)
    with open_read_only(state_dir) as (journal, _serving):
        full = _full(_store(journal), args.run_id, state_dir)
    creation, state = full.creation, full.state
    summary = {
        **_summary(creation, state),
        "session_id": creation["session_id"],
        "mode": creation["mode"],
        "credential_id": creation["authority"]["credential_id"],
        "pending_interaction": (state["pending"] or {}).get("id"),
        "output_text": "".join(e["event"]["text"] for e in full.events
                               if e["event"]["type"] == "output"),
    }
    if wants_json(args):
        print(json.dumps({**summary, "events": [_event_row(e) for e in full.events]}))
        return 0
    emit(args, {k: json.dumps(v) if k == "output_text" else v for k, v in summary.items()})
    print("events:")
    for payload in full.events:
        _print_event(args, payload)
    return 0


# --- runs watch --------------------------------------------------------------------------


def _files_signature(state_dir: Path) -> tuple[tuple[int, int], ...]:
    out = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(state_dir / (JOURNAL_FILE + suffix))
            out.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append((-1, -1))
    return tuple(out)


def run_watch(args: argparse.Namespace, state_dir: Path) -> int:
    """Print the run's events after ``--after``, then follow it until it ends."""
    _check_run_id(args.run_id)
    if not 0 < args.interval <= 3600:  # also refuses nan
        raise UsageError("--interval expects a positive number of seconds, at most 3600, "
                         f"got {args.interval}")
    if args.after < 0:
        raise UsageError(f"--after expects an event sequence of 0 or more, got {args.after}")
    after = args.after
    seen: tuple[tuple[int, int], ...] | None = None
    told_stopped = False
    while True:
        signature = _files_signature(state_dir)
        if signature != seen:
            with open_read_only(state_dir) as (journal, serving):
                full = _full(_store(journal), args.run_id, state_dir)
            for payload in full.events:
                if payload["seq"] > after:
                    _print_event(args, payload)
                    after = payload["seq"]
            if full.state["status"] in TERMINAL:
                return 0
            if not serving and not told_stopped:
                sys.stderr.write("colossus-reference-worker: the worker is not running; "
                                 "waiting for it to continue the run (Ctrl-C stops)\n")
                told_stopped = True
            if serving:
                told_stopped = False
            # While a worker serves, its files change without a new signature being
            # guaranteed (mtime granularity), so only a stopped worker's is trusted.
            seen = None if serving else signature
        time.sleep(args.interval)

