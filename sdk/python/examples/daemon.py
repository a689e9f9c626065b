"""Connect to an installed shared worker (daemon placement).

The four inputs are independent: the worker's public API folder, the instance ID and
certificate SHA-256 that enrolment printed (keep them in trusted configuration), and a
credential provider for the bearer. In production use ``KeyringCredentialProvider``; this
demo reads the bearer from standard input so CI can run it without a keyring backend.

    python examples/daemon.py DIR INSTANCE_ID CERT_SHA256 < bearer
"""

from __future__ import annotations

import sys
from pathlib import Path

import colossus_agent_client as colossus


def main() -> None:
    directory, instance_id, pin = sys.argv[1:4]
    credentials: colossus.CredentialProvider
    if sys.stdin.isatty():
        credentials = colossus.KeyringCredentialProvider("colossus", "my-app")
    else:
        credentials = colossus.InMemoryCredentialProvider(sys.stdin.readline().strip())
    options = colossus.DaemonOptions(
        public_api_dir=Path(directory),
        expected_instance_id=instance_id,
        expected_certificate_sha256=pin,
        credentials=credentials,
    )
    with colossus.Client.connect(options) as client:
        info = client.server_info
        print(
            f"connected to {info.instance_id} ({info.deployment_mode.name}), "
            f"capabilities: {', '.join(sorted(info.capabilities))}"
        )
        for run in client.runs.list(statuses=[colossus.RunStatus.SUCCEEDED]):
            print(f"{run.run_id} {run.status.name}")


if __name__ == "__main__":
    main()
