// Event time in its native type (S8), with the worker's full precision kept, and the documented
// limit of sequences (2^53 - 1, docs/requirements.md S9) (issue 26).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { runEvent, safeNumber } from "../src/convert.js";
import { ProtocolViolationError } from "../src/errors.js";
import { Reason } from "../src/reasons.js";
import { RunEventSchema } from "../src/gen/colossus/api/v1alpha1/runs_pb.js";

describe("event time", () => {
  it("is a Date, and the exact microseconds are kept beside it", () => {
    const pb = create(RunEventSchema, {
      runId: "run_1",
      sequence: 1n,
      eventTime: create(TimestampSchema, { seconds: 1_795_993_195n, nanos: 257_167_999 }),
    });
    const event = runEvent(pb, 1);
    assert.ok(event.eventTime instanceof Date);
    assert.equal(event.eventTime.toISOString(), "2026-11-29T22:59:55.257Z");
    assert.equal(event.eventTimeUs, 1_795_993_195_257_167);
  });

  it("is null when the worker sent none", () => {
    const event = runEvent(create(RunEventSchema, { runId: "run_1", sequence: 1n }), 1);
    assert.equal(event.eventTime, null);
    assert.equal(event.eventTimeUs, null);
  });
});

describe("sequences beyond 2^53 - 1", () => {
  it("are carried exactly up to Number.MAX_SAFE_INTEGER and refused past it, never rounded", () => {
    const at = runEvent(create(RunEventSchema, { runId: "run_1", sequence: 9_007_199_254_740_991n }), 9_007_199_254_740_991);
    assert.equal(at.sequence, Number.MAX_SAFE_INTEGER);
    assert.throws(
      () => safeNumber(9_007_199_254_740_992n, "sequence"),
      (error: unknown) =>
        error instanceof ProtocolViolationError && error.reason === Reason.VALUE_OUT_OF_RANGE && error.code === null && error.metadata["field"] === "sequence",
    );
    assert.equal(safeNumber(9_007_199_254_740_991n, "sequence"), Number.MAX_SAFE_INTEGER);
  });
});
