// The release round trip for the npm tarball: connect, create, watch to the end.
// Run as a plain ES module in a fresh npm project that installed only the tarball from dist/,
// against a reference worker that `dev` started:
//
//   node roundtrip.mjs PUBLIC_API_DIR INSTANCE_ID CERT_SHA256 BEARER_FILE
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Client, InMemoryCredentialProvider } from "colossus-sdk";

const [directory, instanceId, pin, bearerFile] = process.argv.slice(2);
const manifest = createRequire(import.meta.url)("colossus-sdk/package.json");
console.log(`typescript: colossus-sdk ${manifest.version} on Node ${process.version}`);
const client = await Client.connect({
  publicApiDir: directory,
  expectedInstanceId: instanceId,
  expectedCertificateSha256: pin,
  credentials: new InMemoryCredentialProvider(readFileSync(bearerFile, "utf8").trim()),
});
try {
  const info = client.serverInfo;
  console.log(`typescript: connected to ${info.instanceId} (${info.deploymentMode}) over TLS 1.3`);
  const created = await client.runs.create("colossus-script v1\nsay round trip from the npm tarball\n");
  console.log(`typescript: created ${created.run.runId}`);
  for await (const event of client.runs.watch(created.run.runId)) {
    const p = event.payload;
    if (p.kind === "output_delta") console.log(`typescript: event ${event.sequence} output ${JSON.stringify(p.text)}`);
    else if (p.kind === "terminated") console.log(`typescript: event ${event.sequence} terminated ${p.status}`);
    else console.log(`typescript: event ${event.sequence} ${p.kind}`);
  }
} finally {
  await client.close();
}
