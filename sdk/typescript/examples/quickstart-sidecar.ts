// Quick start: the SDK starts a private worker (sidecar), runs a script and prints its output.
//
//   node build/examples/quickstart-sidecar.js
//
// The worker program is $COLOSSUS_REFERENCE_WORKER or colossus-reference-worker on PATH.
import { Client } from "../src/index.js";
import { workerExecutable } from "./worker.js";

await using client = await Client.startSidecar({
  executable: workerExecutable(),
  applicationId: "quickstart",
  scopes: ["runs:execute", "runs:read"],
});

const created = await client.runs.create("colossus-script v1\nsay Hello\nsay , world\n");
for await (const event of client.runs.watch(created.run.runId)) {
  switch (event.payload.kind) {
    case "output_delta":
      process.stdout.write(event.payload.text);
      break;
    case "terminated":
      process.stdout.write(`\n(${event.payload.status})\n`);
      break;
    default:
      break;
  }
}
