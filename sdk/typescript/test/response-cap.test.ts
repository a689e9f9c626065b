// C7 for what the worker sends: a response over the advertised response cap is refused by
// the client itself, RESPONSE_TOO_LARGE with no status code (like REQUEST_TOO_LARGE), on a
// unary call and on a watch alike, and a watch does not reconnect after it.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { Client, ResourceExhaustedError } from "../src/index.js";
import { RunStatus } from "../src/gen/colossus/api/v1alpha1/runs_pb.js";
import { daemonOptions, daemonServerInfo, done, say, startFakeWorker, type FakeWorker } from "./helpers/fake-worker.js";

const CAP = 4096;
const RUN = "run_1";
const workers: FakeWorker[] = [];
const clients: Client[] = [];

after(async () => {
  for (const c of clients) await c.close();
  for (const w of workers) await w.close();
});

const tooLarge = (e: unknown): boolean =>
  e instanceof ResourceExhaustedError && e.reason === "RESPONSE_TOO_LARGE" && e.code === null && e.metadata["limit"] === String(CAP);

describe("the advertised response cap", () => {
  it("refuses a unary answer and a watch event over it locally", async () => {
    const worker = await startFakeWorker({
      serverInfo: daemonServerInfo({ maxResponseBytes: BigInt(CAP) }),
      run: () => ({ runId: RUN, status: RunStatus.RUNNING, lastSequence: 2n, idempotencyKey: "k".repeat(CAP) }),
      watches: [{ events: [say(RUN, 1, "small"), say(RUN, 2, "y".repeat(CAP)), done(RUN, 3)] }],
    });
    workers.push(worker);
    const client = await Client.connect(daemonOptions(worker));
    clients.push(client);
    await assert.rejects(client.runs.get(RUN), tooLarge, "GetRun");
    const delivered: number[] = [];
    await assert.rejects(
      (async () => {
        for await (const e of client.runs.watch(RUN)) delivered.push(e.sequence);
      })(),
      tooLarge,
      "WatchRun",
    );
    assert.deepEqual(delivered, [1]);
    assert.deepEqual(worker.watchCursors, [0], "a local refusal is not retried");
  });
});
