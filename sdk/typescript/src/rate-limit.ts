/**
 * The opt-in create retry under the worker's create rate limit (S11). A create refused with
 * `RESOURCE_EXHAUSTED`/`CREATE_RATE_LIMIT` created nothing, so sending it again with the
 * same idempotency key is safe; the SDK does so only when the caller asks, after the delay
 * the worker named (its `RetryInfo`), or one refill period of the slower advertised bucket.
 */
import { ResourceExhaustedError, invalidArgument } from "./errors.js";
import type { ServerInfo } from "./models.js";

/** The most retries a caller can ask for. */
export const MAX_RATE_LIMIT_RETRIES = 10;

/** The retry option of `runs.create`. */
export interface RateLimitRetryOptions {
  /**
   * How many times to send the create again, with the same idempotency key, when the worker
   * refuses it under its create rate limit (`CREATE_RATE_LIMIT`), each after the refusal's
   * `retryDelayMs`. 0 to 10; default 0 (never).
   */
  readonly rateLimitRetries?: number;
}

export function checkRateLimitRetries(value: number | undefined): number {
  const n = value ?? 0;
  if (!Number.isInteger(n) || n < 0 || n > MAX_RATE_LIMIT_RETRIES) {
    throw invalidArgument(`rateLimitRetries must be an integer from 0 to ${MAX_RATE_LIMIT_RETRIES}`, "rate_limit_retries");
  }
  return n;
}

/** Milliseconds to wait before retrying `error`, or `null` when it is no create-rate refusal. */
export function rateLimitDelayMs(error: unknown, info: ServerInfo): number | null {
  if (!(error instanceof ResourceExhaustedError) || error.reason !== "CREATE_RATE_LIMIT") return null;
  if (error.retryDelayMs !== null) return error.retryDelayMs;
  const rates = [info.limits.createRate.refillPerSecond, info.limits.createRatePerApplication.refillPerSecond].filter((r) => r > 0);
  return rates.length > 0 ? 1000 / Math.min(...rates) : 1000;
}
