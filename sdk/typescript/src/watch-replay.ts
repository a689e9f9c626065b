/**
 * What the replay window keeps of a delivered event, to tell an exact replay from an altered
 * one (S1). A whole decoded event is eight heap objects, and the window keeps up to 1,024 of
 * them alive through every young-generation collection, which made garbage collection the
 * largest cost a CPU profile of the watch charged to the SDK. An output delta (nearly every
 * event of a run) is therefore kept as its text and time only; any other event is kept whole.
 */
import { equals } from "@bufbuild/protobuf";
import { RunEventSchema, type RunEvent as PbRunEvent } from "./gen/colossus/api/v1alpha1/runs_pb.js";

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An output delta with an event time whose seconds a number holds exactly. */
export class KeptDelta {
  constructor(
    readonly text: string,
    readonly seconds: number,
    readonly nanos: number,
  ) {}
}

/** A kept event: compact for an output delta, otherwise the message itself. */
export type KeptEvent = KeptDelta | PbRunEvent;

export function keepForReplay(event: PbRunEvent): KeptEvent {
  const time = event.eventTime;
  if (event.payload.case !== "outputDelta" || time === undefined || time.seconds > MAX_SAFE || time.seconds < -MAX_SAFE) return event;
  return new KeptDelta(event.payload.value.text, Number(time.seconds), time.nanos);
}

/**
 * Exactly `equals(RunEventSchema, a, b)` of the events kept as `a` and `b` (unknown fields
 * aside, as `equals` does). The window compares only events of this watch's run at one
 * sequence, so run ID and sequence are equal already; two output deltas with an event time
 * then differ only in text or time, and a compact event never equals one kept whole.
 */
export function sameEvent(a: KeptEvent, b: KeptEvent): boolean {
  if (a instanceof KeptDelta) return b instanceof KeptDelta && a.text === b.text && a.seconds === b.seconds && a.nanos === b.nanos;
  return !(b instanceof KeptDelta) && equals(RunEventSchema, a, b);
}
