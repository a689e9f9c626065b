"""Ready-to-paste connection snippets for the four SDKs, printed by ``dev``.

The names follow each SDK's README: ``colossus.DaemonOptions`` (Python, imported as ``colossus``),
``Client.connect({...})`` from ``colossus-sdk`` (TypeScript),
``colossus.Connect(ctx, colossus.DaemonOptions{...})`` (Go) and
``Client::connect(DaemonOptions::builder()...)`` (Rust). The bearer is never part of a
snippet: it is read from ``dev``'s bearer file or the keyring, or asked for (a pipe or the
terminal got it). Every snippet is a whole program that runs as pasted: the Python,
TypeScript and Go README tests run theirs against ``dev``, and the release's install check
(noxsessions/_release/install.py) runs all four from the release's artifacts.

Each heading says how to install that SDK today. None is published on its registry yet,
so a heading names the release artifact (``./noxw -s release`` writes them into ``dist/``)
and each SDK README's "Install from a release build" section gives the exact commands.
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
    """Set when the bearer is in the OS keyring (account: the application ID)."""
    bearer_file: str | None = None
    """Set when the bearer is in ``dev``'s owner-only file; neither: a pipe or the terminal."""


_FROM_STORE = "bearer: from your secret store"
SCRIPT = "colossus-script v1\\nsay Hello\\n"


def _python(c: Connection) -> str:
    imports = "import colossus_agent_client as colossus"
    if c.bearer_file:
        imports = f"from pathlib import Path\n\n{imports}"
        provider = (f"colossus.InMemoryCredentialProvider(\n"
                    f"        Path({json.dumps(c.bearer_file)}).read_text().strip()\n    ),")
    elif c.keyring_service:
        provider = (f"colossus.KeyringCredentialProvider({json.dumps(c.keyring_service)}, "
                    f"{json.dumps(c.application_id)}),")
    else:
        imports = f"import getpass\n\n{imports}"
        provider = ('colossus.InMemoryCredentialProvider(getpass.getpass("bearer: ")),'
                    "  # paste it")
    return f"""{imports}

options = colossus.DaemonOptions(
    public_api_dir={json.dumps(c.public_api_dir)},
    expected_instance_id={json.dumps(c.instance_id)},
    expected_certificate_sha256={json.dumps(c.certificate_sha256)},
    credentials={provider}
)
with colossus.Client.connect(options) as client:
    created = client.runs.create("{SCRIPT}")
    for event in client.runs.watch(created.run.run_id):
        print(event.sequence, type(event.payload).__name__)"""


def _typescript(c: Connection) -> str:
    # Plain ES module: runs as a .mjs file on Node 20 (no `await using`, which needs
    # TypeScript or Node 24), so the client is closed in `finally`.
    imports = ""
    setup = ""
    if c.bearer_file:
        name = "InMemoryCredentialProvider"
        imports = 'import { readFileSync } from "node:fs";\n'
        provider = f"new {name}(readFileSync({json.dumps(c.bearer_file)}, \"utf8\").trim()),"
    elif c.keyring_service:
        name = "KeyringCredentialProvider"
        provider = (f"new {name}({json.dumps(c.keyring_service)}, "
                    f"{json.dumps(c.application_id)}),")
    else:
        name = "InMemoryCredentialProvider"
        imports = 'import { createInterface } from "node:readline/promises";\n'
        setup = ("const prompt = createInterface({ input: process.stdin, output: process.stdout });\n"
                 'const bearer = (await prompt.question("bearer: ")).trim(); // paste it\n'
                 "prompt.close();\n")
        provider = f"new {name}(bearer),"
    return f"""{imports}import {{ Client, {name} }} from "colossus-sdk";

{setup}const client = await Client.connect({{
  publicApiDir: {json.dumps(c.public_api_dir)},
  expectedInstanceId: {json.dumps(c.instance_id)},
  expectedCertificateSha256: {json.dumps(c.certificate_sha256)},
  credentials: {provider}
}});
try {{
  const created = await client.runs.create("{SCRIPT}");
  for await (const event of client.runs.watch(created.run.runId)) {{
    console.log(event.sequence, event.payload.kind);
  }}
}} finally {{
  await client.close();
}}"""


def _go(c: Connection) -> str:
    imports = ["context", "fmt", "log"]
    if c.bearer_file:
        imports += ["os", "strings"]
        setup = f"""\tbearer, err := os.ReadFile({json.dumps(c.bearer_file)})
\tif err != nil {{
\t\treturn err
\t}}
\tcredentials, err := colossus.NewInMemoryCredentialProvider(strings.TrimSpace(string(bearer)))
\tif err != nil {{
\t\treturn err
\t}}
"""
    elif c.keyring_service:
        setup = (f"\tcredentials := colossus.KeyringCredentialProvider{{Service: "
                 f"{json.dumps(c.keyring_service)}, Account: {json.dumps(c.application_id)}}}\n")
    else:
        imports += ["bufio", "os", "strings"]
        setup = """\tfmt.Print("bearer: ") // paste it, or pipe it in from your secret store
\tbearer, err := bufio.NewReader(os.Stdin).ReadString('\\n')
\tif err != nil {
\t\treturn err
\t}
\tcredentials, err := colossus.NewInMemoryCredentialProvider(strings.TrimSpace(bearer))
\tif err != nil {
\t\treturn err
\t}
"""
    std = "".join(f"\t{json.dumps(name)}\n" for name in sorted(imports))
    return f"""package main

import (
{std}
\tcolossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

func main() {{
\tif err := run(context.Background()); err != nil {{
\t\tlog.Fatal(err)
\t}}
}}

func run(ctx context.Context) error {{
{setup}\tclient, err := colossus.Connect(ctx, colossus.DaemonOptions{{
\t\tPublicAPIDir:              {json.dumps(c.public_api_dir)},
\t\tExpectedInstanceID:        {json.dumps(c.instance_id)},
\t\tExpectedCertificateSHA256: {json.dumps(c.certificate_sha256)},
\t\tCredentials:               credentials,
\t}})
\tif err != nil {{
\t\treturn err
\t}}
\tdefer client.Close()
\tcreated, err := client.Runs.Create(ctx, colossus.Text("{SCRIPT}"))
\tif err != nil {{
\t\treturn err
\t}}
\tfor event, err := range client.Runs.Watch(ctx, created.Run.RunID) {{
\t\tif err != nil {{
\t\t\treturn err
\t\t}}
\t\tfmt.Printf("%d %T\\n", event.Sequence, event.Payload)
\t}}
\treturn nil
}}"""


_RUST_IN_MEMORY = (
    "    let credentials = InMemoryCredentialProvider::new(Bearer::new(bearer.trim().to_owned())?);\n")


def _rust(c: Connection) -> str:
    uses = ["use colossus_sdk::placement::DaemonOptions;", "use colossus_sdk::Client;",
            "use futures_util::StreamExt;", "use colossus_sdk::model::CreateRunRequest;"]
    if c.bearer_file:
        uses += ["use colossus_sdk::credentials::InMemoryCredentialProvider;", "use colossus_sdk::Bearer;"]
        setup = (f"    let bearer = std::fs::read_to_string({json.dumps(c.bearer_file)})\n"
                 "        .expect(\"the bearer file\");\n" + _RUST_IN_MEMORY)
    elif c.keyring_service:
        uses += ["use colossus_sdk::credentials::KeyringCredentialProvider;"]
        setup = (f"    let credentials = KeyringCredentialProvider::new({json.dumps(c.keyring_service)}, "
                 f"{json.dumps(c.application_id)});\n")
    else:
        uses += ["use colossus_sdk::credentials::InMemoryCredentialProvider;", "use colossus_sdk::Bearer;"]
        setup = ("    // paste it, or pipe it in from your secret store\n"
                 "    let mut bearer = String::new();\n"
                 "    std::io::stdin().read_line(&mut bearer).expect(\"the bearer on stdin\");\n"
                 + _RUST_IN_MEMORY)
    use_lines = "\n".join(sorted(uses))
    return f"""{use_lines}

#[tokio::main]
async fn main() -> colossus_sdk::Result<()> {{
{setup}    let client = Client::connect(
        DaemonOptions::builder()
            .public_api_dir({json.dumps(c.public_api_dir)})
            .expected_instance_id({json.dumps(c.instance_id)})
            .expected_certificate_sha256({json.dumps(c.certificate_sha256)})
            .credentials(credentials)
            .build()?,
    )
    .await?;
    let created = client.runs().create(CreateRunRequest::text("{SCRIPT}")).await?;
    let mut watch = client.runs().watch(&created.run.run_id);
    while let Some(event) = watch.next().await {{
        let event = event?;
        println!("{{}} {{}}", event.sequence, if event.is_terminal() {{ "terminal" }} else {{ "event" }});
    }}
    client.close();
    Ok(())
}}"""


# Where each SDK comes from today: none is on its registry yet, so the headings name the
# release's artifacts (each SDK README's "Install from a release build" has the commands).
HEADINGS = {
    "python": "Python (colossus-agent-client: pip install dist/python/colossus_agent_client-*.whl{extra})",
    "typescript": "TypeScript (colossus-sdk: npm install dist/npm/colossus-sdk-*.tgz)",
    "go": ("Go (github.com/obscuritylabs/colossus-sdks/sdk/go: GOPROXY=file://.../dist/go, "
           "see sdk/go/README.md)"),
    "rust": ("Rust (colossus-sdk{features}: dist/rust/colossus-sdk-*.crate, "
             "see crates/colossus-sdk/README.md)"),
}


def snippets(c: Connection) -> str:
    """The four snippets under headings, ready to paste."""
    # KeyringCredentialProvider needs the SDK's `keyring` extra: the keyring package.
    extra = " keyring" if c.keyring_service and not c.bearer_file else ""
    parts = [(HEADINGS["python"].format(extra=extra), _python(c)),
             (HEADINGS["typescript"], _typescript(c)),
             (HEADINGS["go"], _go(c)),
             (HEADINGS["rust"].format(features=" with its keyring feature" if extra else ""), _rust(c))]
    return "\n\n".join(f"--- {title} ---\n{body}" for title, body in parts) + "\n"
