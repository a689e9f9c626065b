"""The Python conformance client, broken so that it lets go of its SDK clients at sync points.

After each release it closes every SDK client and opens new ones on first use; a watch
is re-created on the new client from the last delivered sequence. Such a client never
shows what the SDK does with a connection it holds across a worker restart, so the
worker-restart cases must notice it (test_sync_sensitivity.py).
"""

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "clients" / "python"))

import client
import steps
from frames import wait_for_release


def watch(self: Any, sdk_client: Any, args: dict[str, Any], report: dict[str, Any]) -> Any:
    tally = steps.WatchTally(args, report)
    options = dict(tally.options)
    while True:
        dropped = False
        with sdk_client.runs.watch(args["run_id"], **options) as stream:
            for event in stream:
                stop = tally.add(event)
                if tally.at_sync_point():
                    wait_for_release(self.instruction["case"], report["id"])
                    options["after_sequence"] = event.sequence
                    dropped = True
                    break
                if stop:
                    break
        if not dropped:
            tally.keep_hooks()
            return tally.outcome()
        self.close()
        sdk_client = self.client(args.get("conn"))


original_perform = steps.CaseRun.perform


def perform(self: Any, op: str, args: dict[str, Any], report: dict[str, Any]) -> Any:
    outcome = original_perform(self, op, args, report)
    if op == "sync":
        self.close()
    return outcome


steps.CaseRun.watch = watch
steps.CaseRun.perform = perform

if __name__ == "__main__":
    sys.exit(client.main())
