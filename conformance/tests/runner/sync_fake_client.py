"""A fake client for the sync-point tests: its behaviour at sync points follows the case ID.

``...never-syncs...`` answers every step without stopping at its sync points (a client
that opens a fresh case instead of holding its connections); ``...hangs-at-sync...``
stops at its first sync point without telling the runner; ``...stray-sync...`` sends a sync
line for the first step, whatever it is; ``...two-releases...`` waits for a second
release too. Anything else stops at each sync point (a ``sync`` step, or a ``watch``
with ``sync_after_events``), waits for the matching release and reports ``{"echo": args,
"released": true}``.
"""

import argparse
import json
import os
import struct
import sys
import time


def read_frame(fd):
    header = b""
    while len(header) < 4:
        header += os.read(fd, 4 - len(header))
    (n,) = struct.unpack(">I", header)
    data = b""
    while len(data) < n:
        data += os.read(fd, n - len(data))
    return data


def write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def is_sync_point(step):
    return step["op"] == "sync" or (step["op"] == "watch" and "sync_after_events" in step.get("args", {}))


def wait_for_release(case, step):
    write({"type": "sync", "case": case, "step": step})
    message = json.loads(sys.stdin.readline())
    assert message == {"type": "release", "case": case, "step": step}, message


def run(msg):
    case = msg["case"]
    reports = []
    for index, step in enumerate(msg["steps"]):
        released = False
        if "stray-sync" in case and index == 0:
            wait_for_release(case, step["id"])
        elif is_sync_point(step) and "never-syncs" not in case:
            if "hangs-at-sync" in case:
                time.sleep(3600)
            wait_for_release(case, step["id"])
            if "two-releases" in case:
                wait_for_release(case, step["id"])
            released = True
        reports.append(
            {
                "id": step["id"],
                "op": step["op"],
                "value": {"echo": step.get("args", {}), "released": released},
            }
        )
    return {"type": "result", "case": case, "steps": reports}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bearer-fd", type=int)
    args = parser.parse_args()
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        msg = json.loads(line)
        if msg["type"] == "hello":
            budget = {"read_attempts": 5, "watch_attempts": 5, "watch_elapsed_seconds": 30.0}
            write(
                {
                    "type": "client_hello",
                    "protocol_version": 1,
                    "sdk": "fake-sync",
                    "sdk_version": "0",
                    "features": [],
                    "retry_budget": budget,
                }
            )
        elif msg["type"] == "shutdown":
            return 0
        elif msg["type"] == "case":
            for c in msg["connections"]:
                if c.get("bearer_frame"):
                    read_frame(args.bearer_fd)
            write(run(msg))


if __name__ == "__main__":
    sys.exit(main())
