// A connection lost mid-call is UNAVAILABLE in every SDK, never CANCELLED (S9, issue 26).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lostConnectionAsUnavailable } from "../src/connection.js";
import { AbortedError, OutcomeUnknownError, TransportError } from "../src/errors.js";
import type { Channel } from "../src/transport/channel.js";

const lost = { connectionLost: () => true } as unknown as Channel;
const alive = { connectionLost: () => false } as unknown as Channel;

describe("a lost connection", () => {
  it("makes a mutation's unknown outcome UNAVAILABLE, keeping its idempotency key", () => {
    const cut = new OutcomeUnknownError("the outcome of the call is unknown: stream closed", { code: "CANCELLED", idempotencyKey: "k-1" });
    const mapped = lostConnectionAsUnavailable(cut, new Error("reset"), lost);
    assert.ok(mapped instanceof OutcomeUnknownError);
    assert.equal(mapped.code, "UNAVAILABLE");
    assert.equal(mapped.idempotencyKey, "k-1");
  });

  it("makes a read's failure a retryable UNAVAILABLE", () => {
    const mapped = lostConnectionAsUnavailable(new TransportError("stream closed", { code: "CANCELLED" }), new Error("reset"), lost);
    assert.ok(mapped instanceof TransportError);
    assert.equal(mapped.code, "UNAVAILABLE");
  });

  it("leaves a CANCELLED alone when the connection is up, or when the caller aborted", () => {
    const fromWorker = new TransportError("cancelled", { code: "CANCELLED" });
    assert.equal(lostConnectionAsUnavailable(fromWorker, fromWorker, alive), fromWorker);
    const aborted = new AbortedError("aborted", { code: "CANCELLED", reason: "ABORTED" });
    assert.equal(lostConnectionAsUnavailable(aborted, aborted, lost), aborted);
  });
});
