"""Ready-to-paste connection snippets for the three SDKs, printed by ``dev``.

The names follow each SDK's README: ``colossus.DaemonOptions`` (Python, imported as ``colossus``),
``Client.connect({...})`` from ``colossus-sdk`` (TypeScript) and
``colossus.Connect(ctx, colossus.DaemonOptions{...})`` (Go). The bearer is never
part of a snippet: it comes from the keyring or from wherever the caller put it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Connection:
    """The non-secret inputs of a daemon connection."""

    public_api_dir: str
    instance_id: str
    certificate_sha256: str
    application_id: str
    keyring_service: str | None
    """``None`` when the bearer went to a pipe or the terminal."""


_FROM_STORE = "bearer: from your secret store"


def _python(c: Connection) -> str:
    if c.keyring_service:
        provider = (f"colossus.KeyringCredentialProvider({json.dumps(c.keyring_service)}, "
                    f"{json.dumps(c.application_id)}),")
    else:
        provider = f"colossus.InMemoryCredentialProvider(bearer),  # {_FROM_STORE}"
    return f"""import colossus_agent_client as colossus

options = colossus.DaemonOptions(
    public_api_dir={json.dumps(c.public_api_dir)},
    expected_instance_id={json.dumps(c.instance_id)},
    expected_certificate_sha256={json.dumps(c.certificate_sha256)},
    credentials={provider}
)
with colossus.Client.connect(options) as client:
    created = client.runs.create("colossus-script v1\\nsay Hello\\n")
    for event in client.runs.watch(created.run.run_id):
        print(event)"""


def _typescript(c: Connection) -> str:
    if c.keyring_service:
        name = "KeyringCredentialProvider"
        provider = (f"new {name}({json.dumps(c.keyring_service)}, "
                    f"{json.dumps(c.application_id)}),")
    else:
        name = "InMemoryCredentialProvider"
        provider = f"new {name}(bearer), // {_FROM_STORE}"
    return f"""import {{ Client, {name} }} from "colossus-sdk";

await using client = await Client.connect({{
  publicApiDir: {json.dumps(c.public_api_dir)},
  expectedInstanceId: {json.dumps(c.instance_id)},
  expectedCertificateSha256: {json.dumps(c.certificate_sha256)},
  credentials: {provider}
}});
const created = await client.runs.create("colossus-script v1\\nsay Hello\\n");
for await (const event of client.runs.watch(created.run.runId)) console.log(event);"""


def _go(c: Connection) -> str:
    if c.keyring_service:
        setup = ""
        provider = (f"colossus.KeyringCredentialProvider{{Service: "
                    f"{json.dumps(c.keyring_service)}, Account: {json.dumps(c.application_id)}}}")
    else:
        setup = (f"provider, err := colossus.NewInMemoryCredentialProvider(bearer) "
                 f"// {_FROM_STORE}\n")
        provider = "provider"
    return f"""{setup}client, err := colossus.Connect(ctx, colossus.DaemonOptions{{
\tPublicAPIDir:              {json.dumps(c.public_api_dir)},
\tExpectedInstanceID:        {json.dumps(c.instance_id)},
\tExpectedCertificateSHA256: {json.dumps(c.certificate_sha256)},
\tCredentials:               {provider},
}})
if err != nil {{
\tlog.Fatal(err)
}}
defer client.Close()
fmt.Println(client.ServerInfo().InstanceID)"""


def snippets(c: Connection) -> str:
    """The three snippets under headings, ready to paste."""
    extra = "[keyring]" if c.keyring_service else ""
    parts = [(f"Python (pip install colossus-agent-client{extra})", _python(c)),
             ("TypeScript (npm install colossus-sdk)", _typescript(c)),
             ("Go (github.com/obscuritylabs/colossus-sdks/sdk/go)", _go(c))]
    return "\n\n".join(f"--- {title} ---\n{body}" for title, body in parts) + "\n"
