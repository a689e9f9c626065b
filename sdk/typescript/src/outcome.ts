/**
 * Helpers over the watch (S11): wait for a run's outcome, or read only its output text.
 * Both follow the run through a {@link Watch}, so every watch rule holds (S1): each event
 * once and in order, a gap or altered replay fails, a clean close counts only once `GetRun`
 * confirms it, and retryable failures reconnect from the last delivered event.
 */
import { ClientClosedError } from "./errors.js";
import type * as m from "./models.js";
import type { Watch, WatchOptions } from "./watch.js";

/** Options of `runs.wait`: those of a watch, except where it starts (wait picks it). */
export type WaitOptions = Omit<WatchOptions, "afterSequence">;

/** Drains `watch` and returns the run its closing `GetRun` confirmed. */
export async function waitForEnd(watch: Watch): Promise<m.Run> {
  try {
    for await (const _event of watch) {
      // Only the end matters; the watch checks every event on the way.
    }
  } finally {
    watch.close();
  }
  const run = watch.finalRun;
  // A watch that ended by itself holds the confirmed run; one without it was stopped under
  // us (the client closing, or the caller's signal, which the watch reports itself).
  if (run === null) throw new ClientClosedError(`the client was closed while waiting for run ${watch.runId}`);
  return run;
}

/**
 * A run's output text as it is released: one string per output delta, in order. Iterate it
 * with `for await`; it ends after the run's terminal event, when {@link finalRun} is the
 * ended run. Other events are skipped with the watch's rules and errors. Leaving the loop,
 * `close()` or `await using` stop it; the run keeps going.
 */
export class TextStream implements AsyncIterable<string>, AsyncDisposable {
  /** @internal */
  constructor(private readonly watch: Watch) {}

  get runId(): string {
    return this.watch.runId;
  }

  /** The sequence of the last event read: `afterSequence` of a later watch or text stream. */
  get lastSequence(): number {
    return this.watch.lastSequence;
  }

  /** The ended run once the iteration ended by itself; `null` before. */
  get finalRun(): m.Run | null {
    return this.watch.finalRun;
  }

  /** Stops the stream. The run keeps going. */
  close(): void {
    this.watch.close();
  }

  /** Stops the stream at the end of an `await using` block. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
    return Promise.resolve();
  }

  /** Yields the run's output text, each piece once and in order. */
  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for await (const event of this.watch) {
      if (event.payload.kind === "output_delta") yield event.payload.text;
    }
  }
}
