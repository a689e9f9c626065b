/** `client.runs`: create, get, list, watch, cancel and respond (S1-S4), wait and textStream (S11). */
import type { RequestOptions } from "./connection.js";
import * as convert from "./convert.js";
import { AbortedError, invalidArgument } from "./errors.js";
import type * as m from "./models.js";
import { isTerminalStatus } from "./models.js";
import { TextStream, waitForEnd, type WaitOptions } from "./outcome.js";
import { checkRateLimitRetries, rateLimitDelayMs, type RateLimitRetryOptions } from "./rate-limit.js";
import { resolveRetryPolicy, sleep, type ResolvedRetryPolicy } from "./retry.js";
import { RunPager } from "./pagination.js";
import {
  buildCancelRun,
  buildCreateRun,
  buildGetRun,
  buildListRuns,
  buildRespond,
  checkId,
  checkIdempotencyKey,
  newIdempotencyKey,
  type CreateRunOptions,
} from "./requests.js";
import { Watch, type ConnectionSource, type WatchOptions } from "./watch.js";

/** Options of `runs.list`. */
export interface ListRunsOptions extends RequestOptions {
  /** Only runs in these statuses. */
  readonly statuses?: readonly m.RunStatus[];
  /** Runs per page (0: the worker's default, which is also its maximum). */
  readonly pageSize?: number;
  /** Resume a traversal from a page's `nextPageToken`. */
  readonly pageToken?: string;
}

/** `client.runs`: create, read, list, watch, cancel and answer runs. */
export class Runs {
  /** @internal */
  constructor(
    private readonly source: ConnectionSource,
    private readonly retry: ResolvedRetryPolicy,
  ) {}

  /**
   * Creates a run. Never retried automatically: on `OutcomeUnknownError` call again with
   * `error.idempotencyKey` to get the same run. Scope `runs:execute`.
   */
  async create(
    input: string | readonly m.InputPart[],
    options: CreateRunOptions & RateLimitRetryOptions & RequestOptions = {},
  ): Promise<m.CreateRunResult> {
    const key = options.idempotencyKey === undefined ? newIdempotencyKey() : checkIdempotencyKey(options.idempotencyKey);
    let retries = checkRateLimitRetries(options.rateLimitRetries);
    try {
      let connection = await this.source.connection();
      const request = buildCreateRun(connection.serverInfo, key, input, options, connection.options.traceContext?.() ?? null);
      for (;;) {
        let response;
        try {
          response = await connection.runs.createRun(request, connection.callOptions(options));
        } catch (error) {
          const mapped = connection.mapError(error, { mutation: true, idempotencyKey: key, signal: options.signal });
          const delayMs = retries > 0 ? rateLimitDelayMs(mapped, connection.serverInfo) : null;
          if (delayMs === null) throw mapped;
          retries -= 1;
          connection.options.logger?.info("create rate-limited; retrying with the same key", { idempotencyKey: key, delayMs: Math.round(delayMs) });
          // Nothing was created, so an abort during the wait is a plain abort.
          await sleep(delayMs, options.signal).catch(() => {
            throw new AbortedError("the call was aborted by the caller", { code: "CANCELLED", reason: "ABORTED", idempotencyKey: key });
          });
          connection = await this.source.connection();
          continue;
        }
        return Object.freeze({ run: convert.run(response.run), replayed: response.replayed, idempotencyKey: key });
      }
    } catch (error) {
      throw withKey(error, key);
    }
  }

  /** One run. Retries `UNAVAILABLE`. Scope `runs:read`. */
  async get(runId: string, options: RequestOptions = {}): Promise<m.Run> {
    checkId(runId, "run_id");
    const connection = await this.source.connection();
    const request = buildGetRun(runId);
    return connection.read(async () => convert.run((await connection.runs.getRun(request, connection.callOptions(options))).run), options.signal);
  }

  /** The caller's runs, newest first, as an async iterable (or `.pages()`). Scope `runs:read`. */
  list(options: ListRunsOptions = {}): RunPager {
    const statuses = options.statuses ?? [];
    const pageSize = options.pageSize ?? 0;
    return new RunPager(async (token) => {
      const connection = await this.source.connection();
      const request = buildListRuns(connection.serverInfo, statuses, pageSize, token);
      return connection.read(async () => {
        const response = await connection.runs.listRuns(request, connection.callOptions(options));
        return Object.freeze({ runs: Object.freeze(response.runs.map((r) => convert.run(r))), nextPageToken: response.nextPageToken });
      }, options.signal);
    }, options.pageToken ?? "");
  }

  /** The run's events, in order, exactly once; see {@link Watch}. Scope `runs:read`. */
  watch(runId: string, options: WatchOptions = {}): Watch {
    checkId(runId, "run_id");
    const after = options.afterSequence ?? 0;
    if (!Number.isSafeInteger(after) || after < 0) {
      throw invalidArgument(
        `afterSequence must be an integer from 0 to ${Number.MAX_SAFE_INTEGER} (2^53 - 1, the largest sequence this SDK carries exactly)`,
        "after_sequence",
      );
    }
    if (options.retry !== undefined) resolveRetryPolicy(options.retry, "retry");
    if (options.idleTimeoutMs !== undefined && !(options.idleTimeoutMs > 0)) {
      throw invalidArgument("idleTimeoutMs must be a positive number of milliseconds", "idle_timeout");
    }
    return new Watch(this.source, runId, this.retry, options);
  }

  /**
   * Waits until the run has ended and returns it (status and result), as Temporal's
   * `handle.result()`. Reads the run; if it has not ended, watches it from its current
   * sequence with every guarantee of {@link watch} and returns the run the watch's closing
   * `GetRun` confirmed. A run waiting for an answer keeps it waiting (bound the silence with
   * `idleTimeoutMs`, or stop it with `signal`). Scope `runs:read`.
   */
  async wait(runId: string, options: WaitOptions = {}): Promise<m.Run> {
    const run = await this.get(runId, options.signal === undefined ? {} : { signal: options.signal });
    if (isTerminalStatus(run.status)) return run;
    return waitForEnd(this.watch(runId, { ...options, afterSequence: run.lastSequence }));
  }

  /**
   * The run's output text as it is released, one string per output delta: a {@link watch}
   * with the same options, rules and errors that yields only text. Scope `runs:read`.
   */
  textStream(runId: string, options: WatchOptions = {}): TextStream {
    return new TextStream(this.watch(runId, options));
  }

  /** Asks the worker to cancel (idempotent; never retried). Scope `runs:control`. */
  async cancel(runId: string, options: RequestOptions = {}): Promise<m.Run> {
    checkId(runId, "run_id");
    const connection = await this.source.connection();
    const request = buildCancelRun(runId);
    try {
      return convert.run((await connection.runs.cancelRun(request, connection.callOptions(options))).run);
    } catch (error) {
      throw connection.mapError(error, { mutation: true, signal: options.signal });
    }
  }

  /** Answers a pending prompt or approval (never retried). Scope `prompts:respond` or `approvals:respond`. */
  async respond(runId: string, interactionId: string, answer: m.InteractionAnswer, options: RequestOptions = {}): Promise<m.Run> {
    const connection = await this.source.connection();
    const request = buildRespond(runId, interactionId, answer);
    try {
      return convert.run((await connection.runs.respondInteraction(request, connection.callOptions(options))).run);
    } catch (error) {
      throw connection.mapError(error, { mutation: true, signal: options.signal });
    }
  }
}

function withKey(error: unknown, key: string): unknown {
  if (error !== null && typeof error === "object" && "idempotencyKey" in error && error.idempotencyKey === null) {
    Object.defineProperty(error, "idempotencyKey", { value: key });
  }
  return error;
}
