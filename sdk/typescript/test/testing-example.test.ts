// The documented example of `colossus-sdk/testing`: how an application unit-tests its own
// code with node:test and the SDK's fake worker (no reference worker needed). In an app,
// import from "colossus-sdk" and "colossus-sdk/testing"; this repository imports the sources.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, OutcomeUnknownError, WatchGapError } from "../src/index.js";
import { FakeWorker, Fault } from "../src/testing/index.js";

// The application code under test: ask for a summary and return its text.
async function summarise(client: Client, text: string): Promise<string> {
  const { run } = await client.runs.create(`summarise: ${text}`, { rateLimitRetries: 3 });
  let summary = "";
  for await (const piece of client.runs.textStream(run.runId)) summary += piece;
  return summary;
}

void test("the summary is the run's output text", async () => {
  await using worker = await FakeWorker.start();
  worker.script(["A short ", "summary."]);
  await using client = await Client.connect(worker.daemonOptions());
  assert.equal(await summarise(client, "a long text"), "A short summary.");
  assert.deepEqual(worker.calls, ["GetServerInfo", "CreateRun", "WatchRun", "GetRun"]);
});

void test("a dropped stream and a rate limit do not change the summary", async () => {
  await using worker = await FakeWorker.start();
  worker.script(["one ", "two ", "three"]);
  worker.inject(Fault.rateLimit({ retryDelayMs: 20 }), Fault.dropWatch({ afterEvents: 2 }));
  await using client = await Client.connect(worker.daemonOptions());
  assert.equal(await summarise(client, "x"), "one two three");
  assert.equal(worker.calls.filter((c) => c === "CreateRun").length, 2);
  assert.equal(worker.calls.filter((c) => c === "WatchRun").length, 2);
});

void test("a gap in the stream fails loudly", async () => {
  await using worker = await FakeWorker.start();
  worker.script(["a", "b", "c"]);
  worker.inject(Fault.gap({ afterEvents: 1 }));
  await using client = await Client.connect(worker.daemonOptions());
  await assert.rejects(summarise(client, "x"), WatchGapError);
});

void test("an unknown create outcome is recovered with the same idempotency key", async () => {
  await using worker = await FakeWorker.start();
  worker.inject(Fault.unavailableAfterCommit("CreateRun"));
  await using client = await Client.connect(worker.daemonOptions());
  const error = await client.runs.create("x").catch((e: unknown) => e);
  assert.ok(error instanceof OutcomeUnknownError && error.idempotencyKey !== null);
  const again = await client.runs.create("x", { idempotencyKey: error.idempotencyKey });
  assert.equal(again.replayed, true);
});
