/** Bounded, jittered exponential backoff with an elapsed-time budget, for reads and watch reconnects. */
import { invalidArgument } from "./errors.js";

/**
 * How reads and watch reconnects retry `UNAVAILABLE`. Mutations are never retried.
 * A retry happens only while both budgets last: attempts and elapsed time.
 */
export interface RetryPolicy {
  /**
   * Calls of one read that reached the worker and failed, the first included; for a watch,
   * stream attempts in a row without a new event. Default 5. While the worker cannot be
   * reached at all (connection refused: it is restarting) no attempt is spent; only the
   * elapsed budget applies, so a restart of a few seconds ends neither a read nor a watch.
   */
  readonly maxAttempts?: number;
  /** Delay ceiling of the first retry, in milliseconds. Default 100. */
  readonly initialBackoffMs?: number;
  /** Ceiling of one delay, in milliseconds. Default 5,000. */
  readonly maxBackoffMs?: number;
  /** Growth of the ceiling per attempt. Default 2. */
  readonly multiplier?: number;
  /** Time allowed from the first failure to the last retry, in milliseconds. Default 30,000. */
  readonly maxElapsedMs?: number;
}

/** A policy with every field filled in and checked. */
export type ResolvedRetryPolicy = Required<RetryPolicy>;

/** The retry policy when none is given: 5 attempts, backoff from 100 ms doubling to 5 s, 30 s in all. */
export const DEFAULT_RETRY: ResolvedRetryPolicy = Object.freeze({
  maxAttempts: 5,
  initialBackoffMs: 100,
  maxBackoffMs: 5_000,
  multiplier: 2,
  maxElapsedMs: 30_000,
});

export function resolveRetryPolicy(policy: RetryPolicy | undefined, field = "retry"): ResolvedRetryPolicy {
  const merged = { ...DEFAULT_RETRY, ...policy };
  for (const [key, value] of Object.entries(merged)) {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw invalidArgument(`${field}.${key} must be a finite non-negative number`, `${field}.${key}`);
    }
  }
  if (!Number.isInteger(merged.maxAttempts) || merged.maxAttempts < 1) {
    throw invalidArgument(`${field}.maxAttempts must be an integer of at least 1`, `${field}.maxAttempts`);
  }
  if (merged.multiplier < 1) throw invalidArgument(`${field}.multiplier must be at least 1`, `${field}.multiplier`);
  return Object.freeze(merged);
}

/** One backoff sequence: call {@link next} after each failure; `null` means give up. */
export class Backoff {
  private attempt = 0;
  private ceiling: number;
  private startedAt: number | null = null;

  constructor(
    private readonly policy: ResolvedRetryPolicy,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {
    this.ceiling = policy.initialBackoffMs;
  }

  /** Retries used so far. */
  get attempts(): number {
    return this.attempt;
  }

  /**
   * The delay before the next retry ("full jitter"), or `null` when a budget is spent.
   * `reachedWorker: false` (connection refused) spends time but no attempt.
   */
  next(reachedWorker = true): number | null {
    const now = this.now();
    this.startedAt ??= now;
    const elapsed = now - this.startedAt;
    if (elapsed >= this.policy.maxElapsedMs) return null;
    if (reachedWorker && this.attempt + 1 >= this.policy.maxAttempts) return null;
    const delay = Math.min(this.random() * Math.min(this.ceiling, this.policy.maxBackoffMs), this.policy.maxElapsedMs - elapsed);
    if (reachedWorker) {
      this.ceiling *= this.policy.multiplier;
      this.attempt += 1;
    } else {
      this.ceiling = Math.min(this.ceiling * this.policy.multiplier, 1_000);
    }
    return delay;
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
