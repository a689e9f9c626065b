/** Faults the fake worker injects into its next matching call (as Python's `Fault`). */
import type { StatusCode } from "../errors.js";

/** The RPCs of the fake worker. */
export type FakeMethod = "GetServerInfo" | "CreateRun" | "GetRun" | "ListRuns" | "WatchRun" | "CancelRun" | "RespondInteraction";

/** A gRPC status name, as the SDK spells them (the same names as the errors' `StatusCode`). */
export type FaultCode = StatusCode;

/** What goes wrong. */
export type FaultKind = "drop" | "gap" | "replay" | "after_commit" | "fail" | "rate_limit" | "not_started";

/**
 * One injected misbehaviour, used once by the next call it applies to. Build them with the
 * static methods and hand them to `FakeWorker.inject`.
 */
export class Fault {
  private constructor(
    /** The RPC it applies to. */
    readonly method: FakeMethod,
    readonly kind: FaultKind,
    /** For watch faults: how many events are sent before it strikes. */
    readonly afterEvents = 0,
    /** For `fail`: the status code. */
    readonly code: FaultCode = "UNAVAILABLE",
    /** For `fail`: the `ErrorInfo` reason to attach, if any. */
    readonly reason: string | null = null,
    /** For `rate_limit`: the delay of the `RetryInfo` it attaches, in milliseconds. */
    readonly retryDelayMs = 0,
  ) {}

  /**
   * The next `WatchRun` sends `afterEvents` events, then fails with `UNAVAILABLE` (a dropped
   * connection): the SDK reconnects from its cursor.
   */
  static dropWatch(options: { readonly afterEvents?: number } = {}): Fault {
    return new Fault("WatchRun", "drop", options.afterEvents ?? 0);
  }

  /** The next `WatchRun` skips one sequence after `afterEvents` events: the SDK throws `WatchGapError`. */
  static gap(options: { readonly afterEvents?: number } = {}): Fault {
    return new Fault("WatchRun", "gap", options.afterEvents ?? 0);
  }

  /** The next `WatchRun` sends its first event again after `afterEvents` events: the SDK drops the copy. */
  static replay(options: { readonly afterEvents?: number } = {}): Fault {
    return new Fault("WatchRun", "replay", options.afterEvents ?? 1);
  }

  /** The next `method` call takes effect, then fails with `UNAVAILABLE`: `OutcomeUnknownError`. */
  static unavailableAfterCommit(method: FakeMethod = "CreateRun"): Fault {
    return new Fault(method, "after_commit");
  }

  /** The next `method` call fails before doing anything, with `code` and an optional `ErrorInfo` reason. */
  static fail(method: FakeMethod, code: FaultCode = "UNAVAILABLE", reason: string | null = null): Fault {
    return new Fault(method, "fail", 0, code, reason);
  }

  /**
   * The next `CreateRun` is refused as the worker's create rate limit refuses:
   * `RESOURCE_EXHAUSTED`, reason `CREATE_RATE_LIMIT`, and a `RetryInfo` of `retryDelayMs`.
   * Nothing is created; `rateLimitRetries` retries it.
   */
  static rateLimit(options: { readonly retryDelayMs?: number } = {}): Fault {
    return new Fault("CreateRun", "rate_limit", 0, "RESOURCE_EXHAUSTED", "CREATE_RATE_LIMIT", options.retryDelayMs ?? 50);
  }

  /**
   * The next `GetRun` answers as if the run had not started yet (`QUEUED` at sequence 0), as
   * a read that raced the run would: `runs.wait` then follows the run's watch to its end.
   */
  static notStarted(): Fault {
    return new Fault("GetRun", "not_started");
  }
}
