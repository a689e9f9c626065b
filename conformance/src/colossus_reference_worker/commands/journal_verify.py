"""``journal verify``: check every record, chain, sealed head, run replay and the sealed
index of unfinished runs of a journal.

Exit 0 when everything verifies, 6 when anything does not (each failure is named).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..credentials import CredentialBook
from ..engine.runs import RunStore
from ..errors import JournalIntegrityError
from .common import EXIT_INTEGRITY, emit, wants_json
from .snapshot import open_read_only, read_secret


def verify(state_dir: Path) -> dict[str, Any]:
    """Full verification of the journal; raises only when it cannot be opened at all."""
    failures: list[dict[str, str]] = []
    runs = 0
    with open_read_only(state_dir) as (journal, serving):
        store = RunStore(journal, max_events=0, reserved=0)
        streams = journal.all_streams()
        failures += [{"stream": s, "problem": "does not end at its sealed head"}
                     for s in journal.damaged_streams()]
        for stream in streams:
            try:
                if stream.startswith("run:"):
                    runs += 1
                    store.full(stream.removeprefix("run:"), with_events=False)
                else:
                    for _record in journal.read_stream(stream):
                        pass
            except JournalIntegrityError as exc:
                failures.append({"stream": stream, "problem": str(exc)})
        if not journal.open_index_intact():
            failures.append({"stream": "open_streams",
                             "problem": "the index of unfinished runs does not match its seal "
                                        "(the worker rebuilds it at its next start)"})
        try:
            CredentialBook(journal, read_secret(state_dir, "verifier-key"))
        except JournalIntegrityError as exc:
            failures.append({"stream": "cred:*", "problem": str(exc)})
        records = journal.record_count()
        verified = journal.records_verified
    # Each damaged stream is reported once, by its most specific problem.
    unique: dict[str, str] = {}
    for item in failures:
        unique.setdefault(item["stream"], item["problem"])
    return {
        "state_dir": str(state_dir),
        "ok": not unique,
        "worker_serving": serving,
        "streams": len(streams),
        "runs": runs,
        "records": records,
        "records_verified": verified,
        "failures": [{"stream": k, "problem": v} for k, v in unique.items()],
    }


def journal_verify(args: argparse.Namespace, state_dir: Path) -> int:
    try:
        report = verify(state_dir)
    except JournalIntegrityError as exc:
        report = {"state_dir": str(state_dir), "ok": False,
                  "failures": [{"stream": "*", "problem": str(exc)}]}
    if wants_json(args):
        print(json.dumps(report))
    else:
        failures = report.pop("failures")
        emit(args, report)
        for item in failures:
            print(f"FAILED {item['stream']}: {item['problem']}")
    return 0 if report["ok"] else EXIT_INTEGRITY
