// Event time in its native type, with the worker's full precision kept (issue 26).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { runEvent } from "../src/convert.js";
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
