"""Conformance client for the Python SDK (``colossus``).

It speaks the client protocol of ``conformance/docs/client-protocol.md``: JSON
lines on stdin/stdout, bearers as length-prefixed frames on the descriptor
named by ``--bearer-fd`` (or the named pipe given by ``--bearer-fifo``). It
uses only the SDK's public API, performs each step it is told to, and reports
what happened. It never decides whether a case passed.

This file holds the protocol loop; ``steps.py`` performs a case's steps, ``views.py``
turns SDK objects into protocol JSON, ``errors.py`` maps SDK errors, ``frames.py`` frames
the messages.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

import colossus_agent_client as colossus
from frames import read_frame, write
from steps import CaseRun

PROTOCOL_VERSION = 1
log = logging.getLogger("conformance-client")


def retry_budget() -> dict[str, Any]:
    """The read/watch retry budget of the SDK's default policy, which every connection uses."""
    policy = colossus.RetryPolicy()
    elapsed = getattr(policy, "max_elapsed", None)
    return {
        "read_attempts": policy.max_attempts,
        "watch_attempts": policy.max_attempts,
        "watch_elapsed_seconds": float(elapsed) if elapsed else None,
    }


def hello(sdk: str) -> dict[str, Any]:
    return {
        "type": "client_hello",
        "protocol_version": PROTOCOL_VERSION,
        "sdk": sdk,
        "sdk_version": getattr(colossus, "__version__", "0"),
        "features": ["daemon", "sidecar", "reconnect_hook", "artifacts", "credential_calls"],
        "retry_budget": retry_budget(),
    }


def run_sync_case(message: dict[str, Any], bearers: dict[str, str]) -> dict[str, Any]:
    case = CaseRun(message, bearers)
    try:
        return case.run()
    finally:
        case.close()


def serve(sdk: str, run_case: Callable[[dict[str, Any], dict[str, str]], dict[str, Any]]) -> int:
    """The protocol loop: hello, then one case at a time until shutdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bearer-fd", type=int)
    parser.add_argument("--bearer-fifo")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=f"{sdk}-client: %(message)s")
    if args.bearer_fd is not None:
        bearer_stream: BinaryIO = os.fdopen(args.bearer_fd, "rb", buffering=0)
    elif args.bearer_fifo:
        bearer_stream = open(args.bearer_fifo, "rb", buffering=0)  # noqa: SIM115
    else:
        parser.error("--bearer-fd or --bearer-fifo is required")
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        kind = message.get("type")
        if kind == "hello":
            write(hello(sdk))
        elif kind == "shutdown":
            return 0
        elif kind == "case":
            bearers = {
                c["name"]: read_frame(bearer_stream) for c in message["connections"] if c.get("bearer_frame")
            }
            log.info("case %s", message["case"])
            try:
                result = run_case(message, bearers)
            except Exception as exc:
                result = {"type": "result", "case": message["case"], "steps": [], "fatal": repr(exc)[:500]}
            write(result)
        else:
            log.error("unknown message type %r", kind)
            return 2
    return 0


def main() -> int:
    return serve("python", run_sync_case)


if __name__ == "__main__":
    sys.exit(main())
