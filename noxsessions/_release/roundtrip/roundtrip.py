"""The release round trip for the Python wheel: connect, create, watch to the end.

Run in a fresh virtualenv holding only the wheel from dist/ and its dependencies, against a
reference worker that ``dev`` started:

    python roundtrip.py PUBLIC_API_DIR INSTANCE_ID CERT_SHA256 BEARER_FILE
"""

import sys
from pathlib import Path

import colossus_agent_client as colossus

directory, instance_id, pin, bearer_file = sys.argv[1:5]
options = colossus.DaemonOptions(
    public_api_dir=directory,
    expected_instance_id=instance_id,
    expected_certificate_sha256=pin,
    credentials=colossus.InMemoryCredentialProvider(Path(bearer_file).read_text().strip()),
)
print(f"python: colossus-agent-client {colossus.__version__} from {colossus.__file__}")
with colossus.Client.connect(options) as client:
    info = client.server_info
    print(f"python: connected to {info.instance_id} ({info.deployment_mode.name}) over TLS 1.3")
    created = client.runs.create("colossus-script v1\nsay round trip from the python wheel\n")
    print(f"python: created {created.run.run_id}")
    for event in client.runs.watch(created.run.run_id):
        payload = event.payload
        if isinstance(payload, colossus.OutputDelta):
            print(f"python: event {event.sequence} output {payload.text!r}")
        elif isinstance(payload, colossus.RunTerminated):
            print(f"python: event {event.sequence} terminated {payload.status.name}")
        else:
            print(f"python: event {event.sequence} {type(payload).__name__}")
