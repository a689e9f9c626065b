// The watch rules, event by event, with no I/O (S1).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ProtocolViolationError, WatchGapError } from "../src/errors.js";
import type { Run, RunStatus } from "../src/models.js";
import { resolveRetryPolicy } from "../src/retry.js";
import { WatchCore } from "../src/watch-core.js";

const policy = resolveRetryPolicy({ maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 1000, maxElapsedMs: 10_000 });
const same = (a: string, b: string): boolean => a === b;

function core(after = 0, window = { maxEvents: 4, maxBytes: 1000 }, now = (): number => 0): WatchCore<string> {
  return new WatchCore<string>("run_a", after, policy, same, window, now, () => 1);
}

function run(status: RunStatus, lastSequence: number, runId = "run_a"): Run {
  return {
    runId, sessionId: "s", mode: "EXECUTE", role: "default", status, lastSequence, createTime: null, updateTime: null,
    idempotencyKey: "k", endUserId: null, maxTurns: 0, pendingInteraction: null, result: null,
  };
}

describe("WatchCore", () => {
  it("delivers contiguous sequences and advances the cursor", () => {
    const c = core();
    assert.equal(c.onEvent("run_a", 1, "one", 10, false), "deliver");
    assert.equal(c.onEvent("run_a", 2, "two", 10, false), "deliver");
    assert.equal(c.lastSequence, 2);
  });

  it("drops an exact replay and refuses an altered one", () => {
    const c = core();
    c.onEvent("run_a", 1, "one", 10, false);
    c.onEvent("run_a", 2, "two", 10, false);
    assert.equal(c.onEvent("run_a", 1, "one", 10, false), "drop");
    assert.throws(() => c.onEvent("run_a", 2, "TWO", 10, false), (e: unknown) => e instanceof ProtocolViolationError && e.reason === "WATCH_REPLAY_ALTERED");
    assert.equal(c.lastSequence, 2);
  });

  it("fails with a gap error naming expected and received", () => {
    const c = core();
    c.onEvent("run_a", 1, "one", 10, false);
    assert.throws(
      () => c.onEvent("run_a", 3, "three", 10, false),
      (e: unknown) => e instanceof WatchGapError && e.metadata["expected"] === "2" && e.metadata["received"] === "3",
    );
  });

  it("a gap at the very start after a cursor is a gap too", () => {
    const c = core(5);
    assert.throws(() => c.onEvent("run_a", 7, "x", 1, false), WatchGapError);
  });

  it("refuses an event of another run", () => {
    assert.throws(() => core().onEvent("run_b", 1, "x", 1, false), (e: unknown) => e instanceof ProtocolViolationError && e.reason === "WATCH_WRONG_RUN");
  });

  it("refuses a new event after the terminal event", () => {
    const c = core();
    c.onEvent("run_a", 1, "end", 10, true);
    assert.ok(c.sawTerminal);
    assert.throws(() => c.onEvent("run_a", 2, "more", 10, false), (e: unknown) => e instanceof ProtocolViolationError && e.reason === "WATCH_AFTER_TERMINAL");
    assert.equal(c.onEvent("run_a", 1, "end", 10, true), "drop");
  });

  it("cannot verify a replay at or before a caller's cursor", () => {
    const c = core(3);
    assert.throws(() => c.onEvent("run_a", 3, "x", 1, false), (e: unknown) => e instanceof ProtocolViolationError && e.reason === "WATCH_REPLAY_UNVERIFIABLE");
  });

  it("bounds the replay window by count", () => {
    const c = core(0, { maxEvents: 4, maxBytes: 1_000_000 });
    for (let s = 1; s <= 10; s += 1) c.onEvent("run_a", s, `e${s}`, 10, false);
    assert.deepEqual(c.windowUsage, { events: 4, bytes: 40 });
    assert.throws(() => c.onEvent("run_a", 6, "e6", 10, false), /cannot be verified/);
    assert.equal(c.onEvent("run_a", 7, "e7", 10, false), "drop");
  });

  it("bounds the replay window by bytes, keeping at least the newest event", () => {
    const c = core(0, { maxEvents: 1000, maxBytes: 100 });
    for (let s = 1; s <= 10; s += 1) c.onEvent("run_a", s, `e${s}`, 40, false);
    assert.deepEqual(c.windowUsage, { events: 2, bytes: 80 });
    c.onEvent("run_a", 11, "big", 500, false);
    assert.deepEqual(c.windowUsage, { events: 1, bytes: 500 });
  });

  it("reconnects from the cursor until the attempt budget is spent", () => {
    const c = core();
    c.onEvent("run_a", 1, "one", 10, false);
    const first = c.onRetryableFailure();
    assert.deepEqual(first && { after: first.afterSequence, attempt: first.attempt }, { after: 1, attempt: 1 });
    assert.equal(c.onRetryableFailure()?.attempt, 2);
    assert.equal(c.onRetryableFailure(), null, "3 attempts in all: the first call and 2 reconnects");
  });

  it("a delivered event refills the reconnect budget", () => {
    const c = core();
    c.onRetryableFailure();
    c.onRetryableFailure();
    c.onEvent("run_a", 1, "one", 10, false);
    assert.equal(c.onRetryableFailure()?.attempt, 1);
  });

  it("an unreachable worker spends time, not attempts, until the elapsed budget ends", () => {
    let now = 0;
    const c = core(0, undefined, () => now);
    for (let i = 0; i < 20; i += 1) {
      assert.equal(c.onRetryableFailure(false)?.attempt, i + 1, "every reconnect is numbered, also one that spent no attempt");
      now += 400;
    }
    now = 10_000;
    assert.equal(c.onRetryableFailure(false), null);
  });

  it("the elapsed budget ends reconnects even with attempts left", () => {
    let now = 0;
    const c = new WatchCore<string>("run_a", 0, resolveRetryPolicy({ maxAttempts: 100, maxElapsedMs: 1000 }), same, undefined, () => now, () => 1);
    assert.notEqual(c.onRetryableFailure(), null);
    now = 1000;
    assert.equal(c.onRetryableFailure(), null);
  });

  it("a clean close completes only at the run's terminal cursor", () => {
    const c = core();
    c.onEvent("run_a", 1, "one", 10, false);
    c.onEvent("run_a", 2, "end", 10, true);
    assert.equal(c.onCleanClose(run("SUCCEEDED", 2)), "complete");
  });

  it("a clean close of a still-running run resumes", () => {
    const c = core();
    c.onEvent("run_a", 1, "one", 10, false);
    assert.equal(c.onCleanClose(run("RUNNING", 3)), "resume");
  });

  it("a clean close before the terminal event of a finished run is a violation", () => {
    const c = core();
    c.onEvent("run_a", 1, "one", 10, false);
    assert.throws(() => c.onCleanClose(run("SUCCEEDED", 2)), (e: unknown) => e instanceof ProtocolViolationError && e.reason === "WATCH_RECONCILE_MISMATCH");
  });

  it("GetRun naming another run, or a run behind the cursor, is a violation", () => {
    const c = core();
    c.onEvent("run_a", 1, "one", 10, false);
    c.onEvent("run_a", 2, "two", 10, false);
    assert.throws(() => c.onCleanClose(run("SUCCEEDED", 2, "run_b")), ProtocolViolationError);
    assert.throws(() => c.onCleanClose(run("RUNNING", 1)), ProtocolViolationError);
  });

  it("a terminal event followed by a non-terminal GetRun is a violation", () => {
    const c = core();
    c.onEvent("run_a", 1, "end", 10, true);
    assert.throws(() => c.onCleanClose(run("RUNNING", 1)), ProtocolViolationError);
  });
});
