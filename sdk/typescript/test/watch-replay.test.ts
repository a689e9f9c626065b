// What the replay window keeps of an event compares exactly as protobuf equality does (S1).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { RunEventSchema, RunStatus, type RunEvent } from "../src/gen/colossus/api/v1alpha1/runs_pb.js";
import { KeptDelta, keepForReplay, sameEvent } from "../src/watch-replay.js";

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function delta(text: string, time: { seconds: bigint; nanos: number } | null): RunEvent {
  return create(RunEventSchema, {
    runId: "run_a",
    sequence: 7n,
    ...(time === null ? {} : { eventTime: create(TimestampSchema, time) }),
    payload: { case: "outputDelta", value: { text } },
  });
}

/** Every variant the comparison must tell apart, or not. */
function variants(): RunEvent[] {
  const times = [null, { seconds: 0n, nanos: 0 }, { seconds: 1_700_000_000n, nanos: 5 }, { seconds: 1_700_000_000n, nanos: 6 },
    { seconds: 1_700_000_001n, nanos: 5 }, { seconds: MAX_SAFE, nanos: 1 }, { seconds: MAX_SAFE + 1n, nanos: 1 },
    { seconds: MAX_SAFE + 2n, nanos: 1 }, { seconds: -MAX_SAFE - 1n, nanos: 0 }, { seconds: -5n, nanos: 0 }];
  const events: RunEvent[] = [];
  for (const time of times) for (const text of ["", "x", "y", "xx", "é"]) events.push(delta(text, time));
  events.push(
    create(RunEventSchema, { runId: "run_a", sequence: 7n, payload: { case: "statusChanged", value: { previousStatus: RunStatus.QUEUED, status: RunStatus.RUNNING } } }),
    create(RunEventSchema, { runId: "run_a", sequence: 7n, eventTime: create(TimestampSchema, { seconds: 1_700_000_000n, nanos: 5 }), payload: { case: "terminated", value: { status: RunStatus.SUCCEEDED } } }),
    create(RunEventSchema, { runId: "run_a", sequence: 7n, eventTime: create(TimestampSchema, { seconds: 1_700_000_000n, nanos: 5 }), payload: { case: undefined } }),
  );
  return events;
}

describe("the replay window's kept events", () => {
  it("keeps an output delta with a safe event time compactly, anything else whole", () => {
    assert.ok(keepForReplay(delta("x", { seconds: 1_700_000_000n, nanos: 5 })) instanceof KeptDelta);
    assert.ok(keepForReplay(delta("x", { seconds: -MAX_SAFE, nanos: 5 })) instanceof KeptDelta);
    for (const whole of [delta("x", null), delta("x", { seconds: MAX_SAFE + 1n, nanos: 0 }), delta("x", { seconds: -MAX_SAFE - 1n, nanos: 0 })]) {
      assert.equal(keepForReplay(whole), whole);
    }
  });

  it("agrees with protobuf equality on every pair, unknown fields aside", () => {
    const events = variants();
    for (const a of events) {
      for (const b of events) {
        assert.equal(sameEvent(keepForReplay(a), keepForReplay(b)), equals(RunEventSchema, a, b), JSON.stringify([a, b], (_, v: unknown) => (typeof v === "bigint" ? String(v) : v)));
      }
    }
  });

  it("treats a re-sent copy with unknown fields as the same event, as equals does", () => {
    const original = delta("x", { seconds: 1_700_000_000n, nanos: 5 });
    // Field 99 (varint 1) is unknown to this contract.
    const withUnknown = fromBinary(RunEventSchema, new Uint8Array([...toBinary(RunEventSchema, original), 0x98, 0x06, 0x01]));
    assert.ok(equals(RunEventSchema, original, withUnknown));
    assert.ok(sameEvent(keepForReplay(original), keepForReplay(withUnknown)));
  });
});
