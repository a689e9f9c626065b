"""Zero-setup quick start: start a private worker, run one prompt, stream its output.

python examples/quickstart_sidecar.py "Say hello"
"""

from __future__ import annotations

import logging
import sys

import colossus_agent_client as colossus
from _worker import worker_executable


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    prompt = sys.argv[1] if len(sys.argv) > 1 else "Hello from the Python SDK"
    options = colossus.SidecarOptions(
        executable=worker_executable(),
        application_id="quickstart",
        scopes=("runs:execute", "runs:read"),
    )
    # The SDK spawns the worker (no shell), receives its endpoint, pin and a one-use bearer
    # over a pipe, checks them, and connects over pinned TLS 1.3.
    with colossus.Client.start_sidecar(options) as client:
        print(
            f"connected to {client.server_info.server_version} "
            f"({client.server_info.deployment_mode.name})"
        )
        created = client.runs.create(prompt)
        print(f"run {created.run.run_id} (idempotency key {created.idempotency_key})")
        for event in client.runs.watch(created.run.run_id):
            if isinstance(event.payload, colossus.OutputDelta):
                print(event.payload.text, end="", flush=True)
            elif isinstance(event.payload, colossus.RunTerminated):
                print(f"\nfinished: {event.payload.status.name}")


if __name__ == "__main__":
    main()
