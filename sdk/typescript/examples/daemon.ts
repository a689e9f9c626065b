// Connect to an installed shared worker (daemon placement).
//
//   node build/examples/daemon.js DIR INSTANCE_ID CERT_SHA256 < bearer
//
// The four inputs are independent: the worker's public API folder, and the instance ID and
// certificate SHA-256 that enrolment printed (keep them in your trusted configuration), and
// the bearer. In production use KeyringCredentialProvider; this demo reads the bearer from
// standard input so CI can run it without a keyring.
import { Client, InMemoryCredentialProvider, KeyringCredentialProvider, type CredentialProvider } from "../src/index.js";

const [directory, instanceId, pin] = process.argv.slice(2);
if (directory === undefined || instanceId === undefined || pin === undefined) {
  console.error("usage: daemon.js DIR INSTANCE_ID CERT_SHA256 < bearer");
  process.exit(2);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8").trim();
}

const credentials: CredentialProvider = process.stdin.isTTY
  ? new KeyringCredentialProvider("colossus", "my-app")
  : new InMemoryCredentialProvider(await readStdin());

await using client = await Client.connect({
  publicApiDir: directory,
  expectedInstanceId: instanceId,
  expectedCertificateSha256: pin,
  credentials,
});
const info = client.serverInfo;
console.log(`connected to ${info.instanceId} (${info.deploymentMode}), capabilities: ${[...info.capabilities].sort().join(", ")}`);
for await (const run of client.runs.list({ statuses: ["SUCCEEDED"] })) {
  console.log(`${run.runId} ${run.status}`);
}
