"""The Python verdict program: JSON lines of inputs on stdin, one verdict line each on stdout.

It calls the parsers ``sdk/python/tests/unit/test_vectors.py`` calls, so the verdicts are
the SDK's own. Run as a script, with the SDK installed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from colossus_agent_client import ColossusError, CredentialError, SidecarError, TrustError
from colossus_agent_client._sidecar_bootstrap import parse_reply
from colossus_agent_client._transport._bearer import Bearer
from colossus_agent_client._transport._certificate import parse_leaf_certificate
from colossus_agent_client._transport._descriptor import parse_descriptor, parse_endpoint

PARSERS: dict[str, Callable[[dict[str, Any]], object]] = {
    "descriptor": lambda v: parse_descriptor(v["text"].encode("utf-8")),
    "endpoint": lambda v: parse_endpoint(v["endpoint"]),
    "certificate": lambda v: parse_leaf_certificate(v["pem"].encode("utf-8"), endpoint_host=v["host"]),
    "bearer": lambda v: Bearer(v["bearer"]),
    "bootstrap_reply": lambda v: parse_reply(v["text"].encode("utf-8")),
}
KINDS: list[tuple[type[BaseException], str]] = [
    (TrustError, "trust"),
    (CredentialError, "credential"),
    (SidecarError, "sidecar"),
    (ColossusError, "other"),
]


def answer(value: dict[str, Any]) -> dict[str, str]:
    try:
        PARSERS[value["kind"]](value)
    except Exception as exc:  # an untyped escape is itself a finding
        kind = next((name for cls, name in KINDS if isinstance(exc, cls)), "untyped")
        return {"verdict": kind, "error": type(exc).__name__}
    return {"verdict": "accept"}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            # Flushed per line, so a crash still leaves every earlier verdict readable.
            sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
