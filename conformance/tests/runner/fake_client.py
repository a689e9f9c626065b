"""A deliberately simple client used by the runner's own tests.

It speaks the client protocol and behaves according to the case ID:
``...crash...`` exits mid-case, ``...hang...`` never answers, ``...garbage...``
writes a non-JSON line, ``...leak...`` echoes its bearer into an error
message, ``...rendezvous...`` answers only once ``FAKE_RENDEZVOUS_COUNT`` clients
have reached that case (each process leaves a file named ``FAKE_CLIENT_NAME-<pid>``
in ``FAKE_RENDEZVOUS_DIR``); anything else answers every step with ``{"echo": args}``.
"""

import argparse
import json
import os
import re
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
    return data.decode("utf-8", "replace")


def rendezvous(case):
    """Waits (until the runner's timeout kills it) for every client to reach this case.

    Cases ``X-1``, ``X-2``... meet at ``X``, and each client process counts once, so
    two runners of one column meet when they run two such cases at the same time.
    """
    folder = os.path.join(os.environ["FAKE_RENDEZVOUS_DIR"], re.sub(r"-\d+$", "", case))
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, f"{os.environ['FAKE_CLIENT_NAME']}-{os.getpid()}"), "w").close()
    while len(os.listdir(folder)) < int(os.environ["FAKE_RENDEZVOUS_COUNT"]):
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bearer-fd", type=int)
    parser.add_argument("--bearer-fifo")
    args = parser.parse_args()
    fd = args.bearer_fd if args.bearer_fd is not None else os.open(args.bearer_fifo, os.O_RDONLY)
    out = sys.stdout
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "hello":
            out.write(
                json.dumps(
                    {
                        "type": "client_hello",
                        "protocol_version": 1,
                        "sdk": "fake",
                        "sdk_version": "0",
                        "features": ["fake-feature"],
                        "retry_budget": {
                            "read_attempts": 5,
                            "watch_attempts": 5,
                            "watch_elapsed_seconds": None,
                        },
                    }
                )
                + "\n"
            )
        elif msg["type"] == "shutdown":
            return 0
        elif msg["type"] == "case":
            bearers = [read_frame(fd) for c in msg["connections"] if c.get("bearer_frame")]
            case = msg["case"]
            print(f"fake client running {case}", file=sys.stderr)
            if "crash" in case:
                os._exit(3)
            if "hang" in case:
                time.sleep(3600)
            if "rendezvous" in case:
                rendezvous(case)
            if "garbage" in case:
                out.write("this is not json\n")
                out.flush()
                continue
            steps = []
            for step in msg["steps"]:
                result = {"id": step["id"], "op": step["op"], "value": {"echo": step.get("args", {})}}
                if "leak" in case and bearers:
                    result["error"] = {"kind": "other", "message": "failed with " + bearers[0]}
                steps.append(result)
            out.write(json.dumps({"type": "result", "case": case, "steps": steps}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
