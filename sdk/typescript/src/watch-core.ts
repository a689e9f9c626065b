/**
 * The watch rules (S1) as a state machine with no I/O. The driver in `watch.ts` feeds it
 * what the stream does and does what it answers. It keeps the cursor, a window of recently
 * delivered events bounded in count and in bytes (to tell an exact replay from an altered
 * one), and the reconnect budget, so memory is constant however long the run is.
 */
import { ProtocolViolationError, WatchGapError } from "./errors.js";
import type { Run } from "./models.js";
import { isTerminalStatus } from "./models.js";
import { Backoff, type ResolvedRetryPolicy } from "./retry.js";

/** Bounds of the replay window. */
export interface ReplayWindow {
  readonly maxEvents: number;
  readonly maxBytes: number;
}

/**
 * 1,024 events and 8 MiB (encoded size), as in the Python and Go SDKs: the byte bound holds
 * two responses of the largest size the client accepts. The newest event always stays,
 * however large, so its replay can still be compared.
 */
export const DEFAULT_REPLAY_WINDOW: ReplayWindow = Object.freeze({ maxEvents: 1024, maxBytes: 8 * 1024 * 1024 });

/** What the driver does with one received event. */
export type Verdict = "deliver" | "drop";

/** What the driver does after a clean close was reconciled with `GetRun`. */
export type CloseAction = "complete" | "resume";

/** Reconnect after `delayMs` from `afterSequence`. */
export interface Resume {
  readonly delayMs: number;
  readonly afterSequence: number;
  /** 1 for the first reconnect since the last delivered event. */
  readonly attempt: number;
}

export class WatchCore<C> {
  private lastSequenceValue: number;
  private terminalSequence: number | null = null;
  // Delivered sequences are contiguous, so the window is the range (oldest, last]; it lives
  // in a ring indexed by sequence, with no allocation per event.
  private readonly contents: (C | undefined)[];
  private readonly sizes: number[];
  private oldest: number;
  private recentBytes = 0;
  private backoff: Backoff;
  private reconnects = 0;
  private progressed = false;

  constructor(
    readonly runId: string,
    afterSequence: number,
    private readonly policy: ResolvedRetryPolicy,
    private readonly same: (a: C, b: C) => boolean,
    private readonly window: ReplayWindow = DEFAULT_REPLAY_WINDOW,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {
    this.lastSequenceValue = afterSequence;
    this.oldest = afterSequence;
    this.contents = new Array<C | undefined>(window.maxEvents);
    this.sizes = new Array<number>(window.maxEvents).fill(0);
    this.backoff = new Backoff(policy, now, random);
  }

  /** The sequence of the last delivered event: the resume cursor. */
  get lastSequence(): number {
    return this.lastSequenceValue;
  }

  /** True once the terminal event was delivered. */
  get sawTerminal(): boolean {
    return this.terminalSequence !== null;
  }

  /** Events currently remembered for replay comparison, and their estimated bytes. */
  get windowUsage(): { readonly events: number; readonly bytes: number } {
    return { events: this.lastSequenceValue - this.oldest, bytes: this.recentBytes };
  }

  /** Classifies one received event; throws on a contract violation. */
  onEvent(runId: string, sequence: number, content: C, size: number, terminal: boolean): Verdict {
    if (runId !== this.runId) {
      throw new ProtocolViolationError("the watch delivered an event of another run", { reason: "WATCH_WRONG_RUN" });
    }
    if (sequence <= this.lastSequenceValue) {
      const seen = sequence > this.oldest ? this.contents[sequence % this.window.maxEvents] : undefined;
      if (seen === undefined) {
        // Older than the window, or at/before a cursor the caller supplied: unverifiable.
        throw new ProtocolViolationError(
          `the watch re-sent sequence ${sequence}, which cannot be verified (cursor ${this.lastSequenceValue})`,
          { reason: "WATCH_REPLAY_UNVERIFIABLE" },
        );
      }
      if (!this.same(seen, content)) {
        throw new ProtocolViolationError(`the watch replayed sequence ${sequence} with different content`, {
          reason: "WATCH_REPLAY_ALTERED",
        });
      }
      return "drop";
    }
    if (this.terminalSequence !== null) {
      throw new ProtocolViolationError("the watch sent an event after the terminal event", { reason: "WATCH_AFTER_TERMINAL" });
    }
    if (sequence !== this.lastSequenceValue + 1) {
      throw new WatchGapError(`the watch skipped from sequence ${this.lastSequenceValue} to ${sequence}`, {
        reason: "WATCH_GAP",
        metadata: { expected: String(this.lastSequenceValue + 1), received: String(sequence) },
      });
    }
    this.remember(sequence, content, size);
    this.lastSequenceValue = sequence;
    if (terminal) this.terminalSequence = sequence;
    this.progressed = true;
    return "deliver";
  }

  private remember(sequence: number, content: C, size: number): void {
    const capacity = this.window.maxEvents;
    if (sequence - this.oldest > capacity) this.forgetOldest();
    const slot = sequence % capacity;
    this.contents[slot] = content;
    this.sizes[slot] = size;
    this.recentBytes += size;
    // The newest event is always kept, however large.
    while (this.recentBytes > this.window.maxBytes && this.oldest < sequence - 1) this.forgetOldest();
  }

  private forgetOldest(): void {
    this.oldest += 1;
    const slot = this.oldest % this.window.maxEvents;
    this.recentBytes -= this.sizes[slot] ?? 0;
    this.contents[slot] = undefined;
    this.sizes[slot] = 0;
  }

  /** A retryable failure (or a clean close of a running run): the next reconnect, or `null` when a budget is spent. */
  onRetryableFailure(reachedWorker = true): Resume | null {
    if (this.progressed) {
      // Progress since the last failure refills both budgets.
      this.progressed = false;
      this.backoff = new Backoff(this.policy, this.now, this.random);
      this.reconnects = 0;
    }
    const delayMs = this.backoff.next(reachedWorker);
    if (delayMs === null) return null;
    // Every reconnect counts here, also one that spent no attempt (the worker was unreachable).
    this.reconnects += 1;
    return { delayMs, afterSequence: this.lastSequenceValue, attempt: this.reconnects };
  }

  /**
   * Reconciles a stream that ended cleanly with `GetRun`: complete only when the same run
   * is terminal exactly at the delivered cursor; resume when it is still running and has
   * not gone backwards; anything else is a protocol violation.
   */
  onCleanClose(run: Run): CloseAction {
    if (run.runId !== this.runId) {
      throw new ProtocolViolationError("GetRun returned another run while reconciling a watch", {
        reason: "WATCH_RECONCILE_MISMATCH",
      });
    }
    if (isTerminalStatus(run.status)) {
      if (run.lastSequence === this.lastSequenceValue) return "complete";
      throw new ProtocolViolationError(
        `the watch closed at sequence ${this.lastSequenceValue} but the run ended at ${run.lastSequence}`,
        {
          reason: "WATCH_RECONCILE_MISMATCH",
          metadata: { delivered: String(this.lastSequenceValue), run: String(run.lastSequence) },
        },
      );
    }
    if (run.lastSequence < this.lastSequenceValue || this.terminalSequence !== null) {
      throw new ProtocolViolationError("the run's state contradicts the events the watch delivered", {
        reason: "WATCH_RECONCILE_MISMATCH",
      });
    }
    return "resume";
  }
}
