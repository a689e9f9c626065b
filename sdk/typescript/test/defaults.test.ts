// The defaults that are one concept in all four SDKs (docs/requirements.md, S1 and S7).
// The Python, Go and Rust suites pin the same numbers: a change here must change there.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_RESTARTS,
  DEFAULT_RESTART_BACKOFF,
  DEFAULT_SHUTDOWN_GRACE_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  resolveClientOptions,
} from "../src/options.js";
import { Backoff, DEFAULT_RETRY } from "../src/retry.js";
import { DEFAULT_REPLAY_WINDOW, WatchCore } from "../src/watch-core.js";

describe("shared defaults", () => {
  it("retry: 5 attempts within 30 s, from 100 ms doubling up to 5 s", () => {
    assert.deepEqual({ ...DEFAULT_RETRY }, { maxAttempts: 5, initialBackoffMs: 100, maxBackoffMs: 5_000, multiplier: 2, maxElapsedMs: 30_000 });
    assert.deepEqual({ ...resolveClientOptions({}).retry }, { ...DEFAULT_RETRY });
  });

  it("maxAttempts counts the first call, and delays are full jitter up to the ceiling", () => {
    const ceilings: number[] = [];
    const lowest = new Backoff(DEFAULT_RETRY, () => 0, () => 0);
    const highest = new Backoff(DEFAULT_RETRY, () => 0, () => 1);
    for (;;) {
      const low = lowest.next();
      const high = highest.next();
      if (low === null || high === null) break;
      assert.equal(low, 0);
      ceilings.push(high);
    }
    assert.deepEqual(ceilings, [100, 200, 400, 800], "4 retries after the first call");
  });

  it("timeouts: 30 s per call, 10 s to connect, no watch idle timeout", () => {
    const resolved = resolveClientOptions({});
    assert.equal(DEFAULT_TIMEOUT_MS, 30_000);
    assert.equal(DEFAULT_CONNECT_TIMEOUT_MS, 10_000);
    assert.equal(resolved.timeoutMs, 30_000);
    assert.equal(resolved.connectTimeoutMs, 10_000);
    assert.equal(resolved.maxResponseBytes, 4 * 1024 * 1024);
    assert.equal(DEFAULT_MAX_RESPONSE_BYTES, 4 * 1024 * 1024);
  });

  it("replay window: 1,024 events and 8 MiB, room for two responses of the largest size", () => {
    assert.deepEqual({ ...DEFAULT_REPLAY_WINDOW }, { maxEvents: 1024, maxBytes: 8 * 1024 * 1024 });
    assert.ok(DEFAULT_REPLAY_WINDOW.maxBytes >= 2 * DEFAULT_MAX_RESPONSE_BYTES);
  });

  it("replay window: an event larger than the byte bound is kept, alone, and still compared", () => {
    const core = new WatchCore<string>("run_1", 0, DEFAULT_RETRY, (a, b) => a === b);
    core.onEvent("run_1", 1, "small", 5, false);
    const huge = DEFAULT_REPLAY_WINDOW.maxBytes + 1;
    assert.equal(core.onEvent("run_1", 2, "huge", huge, false), "deliver");
    assert.deepEqual(core.windowUsage, { events: 1, bytes: huge });
    assert.equal(core.onEvent("run_1", 2, "huge", huge, false), "drop");
    assert.throws(() => core.onEvent("run_1", 2, "altered", huge, false), { name: "ProtocolViolationError" });
  });

  it("sidecar: 30 s to start, at most 3 restarts from 0.5 s doubling up to 5 s, 5 s to exit", () => {
    assert.equal(DEFAULT_STARTUP_TIMEOUT_MS, 30_000);
    assert.equal(DEFAULT_MAX_RESTARTS, 3);
    assert.equal(DEFAULT_SHUTDOWN_GRACE_MS, 5_000);
    assert.deepEqual({ ...DEFAULT_RESTART_BACKOFF }, { maxAttempts: 4, initialBackoffMs: 500, maxBackoffMs: 5_000, multiplier: 2, maxElapsedMs: 30_000 });
  });
});
