// runs.wait, runs.textStream, the create retry under CREATE_RATE_LIMIT and withOptions (S11),
// against the SDK's own fake worker.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, ResourceExhaustedError, WatchGapError, InvalidArgumentError, AbortedError } from "../src/index.js";
import { decodeRetryDelayMs } from "../src/status.js";
import { FakeWorker, Fault } from "../src/testing/index.js";

async function setUp(): Promise<{ worker: FakeWorker; client: Client; [Symbol.asyncDispose]: () => Promise<void> }> {
  const worker = await FakeWorker.start();
  const client = await Client.connect(worker.daemonOptions());
  return {
    worker,
    client,
    [Symbol.asyncDispose]: async () => {
      await client.close();
      await worker.close();
    },
  };
}

const count = (calls: readonly string[], name: string): number => calls.filter((c) => c === name).length;

void test("wait returns an ended run with one read", async () => {
  await using t = await setUp();
  t.worker.script(["Hello", ", world"]);
  const { run } = await t.client.runs.create("hi");
  const ended = await t.client.runs.wait(run.runId);
  assert.equal(ended.status, "SUCCEEDED");
  assert.equal(ended.result?.outputText, "Hello, world");
  assert.deepEqual(t.worker.calls.slice(1), ["CreateRun", "GetRun"]);
});

void test("wait follows a run that has not ended through its watch, reconnects included", async () => {
  await using t = await setUp();
  t.worker.script(["a", "b", "c"], { status: "FAILED" });
  t.worker.inject(Fault.notStarted(), Fault.dropWatch({ afterEvents: 2 }));
  const { run } = await t.client.runs.create("x");
  const ended = await t.client.runs.wait(run.runId);
  assert.equal(ended.status, "FAILED");
  assert.equal(ended.lastSequence, 4);
  assert.deepEqual(t.worker.calls.slice(1), ["CreateRun", "GetRun", "WatchRun", "WatchRun", "GetRun"]);
});

void test("wait fails as the watch fails", async () => {
  await using t = await setUp();
  t.worker.script(["a", "b", "c"]);
  t.worker.inject(Fault.notStarted(), Fault.gap({ afterEvents: 1 }));
  const { run } = await t.client.runs.create("x");
  await assert.rejects(t.client.runs.wait(run.runId), WatchGapError);
});

void test("textStream yields only output text, once each, and keeps the ended run", async () => {
  await using t = await setUp();
  t.worker.script(["one ", "two ", "three"]);
  t.worker.inject(Fault.replay({ afterEvents: 2 }));
  const { run } = await t.client.runs.create("x");
  const texts = t.client.runs.textStream(run.runId);
  const pieces: string[] = [];
  for await (const piece of texts) pieces.push(piece);
  assert.deepEqual(pieces, ["one ", "two ", "three"]);
  assert.equal(texts.finalRun?.status, "SUCCEEDED");
  assert.equal(texts.lastSequence, 4);
});

void test("textStream resumes after a sequence", async () => {
  await using t = await setUp();
  t.worker.script(["one ", "two ", "three"]);
  const { run } = await t.client.runs.create("x");
  const pieces: string[] = [];
  for await (const piece of t.client.runs.textStream(run.runId, { afterSequence: 2 })) pieces.push(piece);
  assert.deepEqual(pieces, ["three"]);
});

void test("a rate-limited create is retried with the same key after the worker's delay", async () => {
  await using t = await setUp();
  t.worker.inject(Fault.rateLimit({ retryDelayMs: 200 }));
  const started = performance.now();
  const result = await t.client.runs.create("x", { idempotencyKey: "k-1", rateLimitRetries: 2 });
  assert.ok(performance.now() - started >= 195);
  assert.equal(result.idempotencyKey, "k-1");
  assert.equal(result.replayed, false);
  assert.equal(count(t.worker.calls, "CreateRun"), 2);
});

void test("without retries the refusal exposes the delay and the key", async () => {
  await using t = await setUp();
  t.worker.inject(Fault.rateLimit({ retryDelayMs: 1500 }));
  const error = await t.client.runs.create("x").catch((e: unknown) => e);
  assert.ok(error instanceof ResourceExhaustedError);
  assert.equal(error.reason, "CREATE_RATE_LIMIT");
  assert.equal(error.retryDelayMs, 1500);
  assert.notEqual(error.idempotencyKey, null);
  assert.equal(count(t.worker.calls, "CreateRun"), 1);
});

void test("the retries run out and the last refusal is thrown", async () => {
  await using t = await setUp();
  t.worker.inject(Fault.rateLimit({ retryDelayMs: 5 }), Fault.rateLimit({ retryDelayMs: 5 }), Fault.rateLimit({ retryDelayMs: 5 }));
  await assert.rejects(t.client.runs.create("x", { rateLimitRetries: 2 }), ResourceExhaustedError);
  assert.equal(count(t.worker.calls, "CreateRun"), 3);
});

void test("other exhaustion is never retried and carries no delay", async () => {
  await using t = await setUp();
  t.worker.inject(Fault.fail("CreateRun", "RESOURCE_EXHAUSTED", "ACTIVE_RUN_LIMIT"));
  const error = await t.client.runs.create("x", { rateLimitRetries: 5 }).catch((e: unknown) => e);
  assert.ok(error instanceof ResourceExhaustedError);
  assert.equal(error.retryDelayMs, null);
  assert.equal(count(t.worker.calls, "CreateRun"), 1);
});

void test("rateLimitRetries outside 0-10 is refused before sending", async () => {
  await using t = await setUp();
  for (const bad of [-1, 11, 1.5]) {
    await assert.rejects(t.client.runs.create("x", { rateLimitRetries: bad }), InvalidArgumentError);
  }
  assert.equal(count(t.worker.calls, "CreateRun"), 0);
});

void test("an abort during the rate-limit wait is a plain abort with the key", async () => {
  await using t = await setUp();
  t.worker.inject(Fault.rateLimit({ retryDelayMs: 5_000 }));
  const controller = new AbortController();
  const pending = t.client.runs.create("x", { rateLimitRetries: 1, signal: controller.signal, idempotencyKey: "k-2" });
  setTimeout(() => {
    controller.abort();
  }, 50);
  const error = await pending.catch((e: unknown) => e);
  assert.ok(error instanceof AbortedError);
  assert.equal(error.idempotencyKey, "k-2");
});

void test("RetryInfo decoding: whole and fractional seconds, malformed and absurd values", () => {
  // retry_delay { seconds: 1, nanos: 250000000 }
  assert.equal(decodeRetryDelayMs(Uint8Array.from([0x0a, 0x07, 0x08, 0x01, 0x10, 0x80, 0xe5, 0x9a, 0x77])), 1250);
  assert.equal(decodeRetryDelayMs(Uint8Array.from([0x0a, 0x00])), 0);
  assert.equal(decodeRetryDelayMs(Uint8Array.from([0x0a, 0x05, 0x08])), null);
  // seconds: 7200 (two hours) is ignored
  assert.equal(decodeRetryDelayMs(Uint8Array.from([0x0a, 0x03, 0x08, 0xa0, 0x38])), null);
});

void test("withOptions changes the defaults over the same connection", async () => {
  await using t = await setUp();
  t.worker.script(["a"]);
  const fast = t.client.withOptions({ timeoutMs: 2_000, retry: { maxAttempts: 2 } });
  const { run } = await fast.runs.create("x");
  t.worker.inject(Fault.fail("GetRun"), Fault.fail("GetRun"), Fault.fail("GetRun"));
  // Two attempts under the derived policy, then the read fails; the parent still has four.
  await assert.rejects(fast.runs.get(run.runId));
  assert.equal(count(t.worker.calls, "GetRun"), 2);
  assert.equal((await t.client.runs.get(run.runId)).status, "SUCCEEDED");
  assert.equal(count(t.worker.calls, "GetServerInfo"), 1, "no second connection");
  assert.equal(fast.serverInfo.instanceId, t.client.serverInfo.instanceId);
});

void test("withOptions refuses a bad value at once, and closing a derived client closes both", async () => {
  await using t = await setUp();
  assert.throws(() => t.client.withOptions({ timeoutMs: -1 }), InvalidArgumentError);
  const derived = t.client.withOptions({ timeoutMs: null });
  await derived.close();
  await assert.rejects(t.client.runs.get("run_1"));
});
