// Stop a watch part-way, keep its cursor, and resume from it with a second watch: every
// event is seen exactly once (what another process would do with a stored cursor).
//
//   node build/examples/watch-resume.js
import { Client } from "../src/index.js";
import { workerExecutable } from "./worker.js";

await using client = await Client.startSidecar({ executable: workerExecutable(), applicationId: "watch-resume" });
const created = await client.runs.create("colossus-script v1\nrepeat 5 say tick\n");
const runId = created.run.runId;

const first = client.runs.watch(runId);
for await (const event of first) {
  console.log(`first watch: #${event.sequence} ${event.payload.kind}`);
  if (event.sequence === 3) break; // leaving the loop closes the stream; the run keeps going
}
const cursor = first.lastSequence;
console.log(`stored cursor ${cursor}`);

for await (const event of client.runs.watch(runId, {
  afterSequence: cursor,
  onReconnect: (info) => {
    console.log(`reconnecting after #${info.afterSequence} (attempt ${info.attempt})`);
  },
})) {
  console.log(`resumed watch: #${event.sequence} ${event.payload.kind}`);
}
