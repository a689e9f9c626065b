/**
 * The watch driver (S1): opens a stream from the cursor, hands each event to
 * {@link WatchCore}, yields what it delivers, and on a failure or a clean close does what
 * the core decides. All rules live in the core; this file only moves messages.
 */
import type { Connection } from "./connection.js";
import * as convert from "./convert.js";
import { isRetryable, isUnreachable } from "./status.js";
import { AbortedError, ColossusError, TransportError, WatchIdleTimeoutError } from "./errors.js";
import { RunService, type WatchRunResponse } from "./gen/colossus/api/v1alpha1/run_service_pb.js";
import type { RunEvent as PbRunEvent } from "./gen/colossus/api/v1alpha1/runs_pb.js";
import type * as m from "./models.js";
import type { RunEvent } from "./models.js";
import { buildWatchRun } from "./requests.js";
import { resolveRetryPolicy, sleep, type ResolvedRetryPolicy, type RetryPolicy } from "./retry.js";
import { openServerStream } from "./transport/server-stream.js";
import { WatchCore, type ReplayWindow, type Resume } from "./watch-core.js";
import { keepForReplay, sameEvent, type KeptEvent } from "./watch-replay.js";

/** Passed to `onReconnect` before each reconnect. */
export interface ReconnectInfo {
  readonly runId: string;
  /** 1 for the first reconnect since the last delivered event. */
  readonly attempt: number;
  /** Milliseconds the watch waits before reconnecting. */
  readonly delayMs: number;
  /** The cursor the new stream starts after. */
  readonly afterSequence: number;
  /** The retryable failure, or `null` after a clean close of a still-running run. */
  readonly cause: ColossusError | null;
}

/** Options of `runs.watch`. */
export interface WatchOptions {
  /** Start after this sequence (exclusive cursor). Default 0: from the first event. */
  readonly afterSequence?: number;
  /** Stops the watch (the run keeps going). */
  readonly signal?: AbortSignal;
  /** Called before each reconnect. */
  readonly onReconnect?: (info: ReconnectInfo) => void;
  /** Fail with `WatchIdleTimeoutError` when no event arrives for this long, in milliseconds. */
  readonly idleTimeoutMs?: number;
  /**
   * Overrides the client's retry policy for reconnects. Any subset of fields: those left
   * out take the documented defaults (`DEFAULT_RETRY_POLICY`), as for the client's `retry`.
   */
  readonly retry?: RetryPolicy;
  /** Overrides the replay window bounds. */
  readonly replayWindow?: ReplayWindow;
}

/** Where the watch gets its connection (a sidecar may replace it between attempts). */
export interface ConnectionSource {
  connection(): Promise<Connection>;
}

/** A cheap upper estimate of an event's size, for the byte bound of the replay window. */
export function estimateEventBytes(event: PbRunEvent): number {
  let size = 64 + event.runId.length;
  const p = event.payload;
  switch (p.case) {
    case "outputDelta":
      size += p.value.text.length * 3;
      break;
    case "interactionRequested": {
      const kind = p.value.interaction?.kind;
      if (kind?.case === "prompt") size += (kind.value.question.length + kind.value.choices.join("").length) * 3 + 16 * kind.value.choices.length;
      else size += 256;
      break;
    }
    case "terminated":
      size += ((p.value.result?.outputText.length ?? 0) + (p.value.result?.research?.report.length ?? 0)) * 3 + 128;
      break;
    default:
      size += 128;
  }
  return size;
}

/**
 * A run's events in order, each exactly once. Iterate it with `for await`; leaving the loop,
 * `close()`, `await using` or the signal stop the stream. Stopping never cancels the run.
 */
export class Watch implements AsyncIterable<RunEvent>, AsyncDisposable {
  private readonly core: WatchCore<KeptEvent>;
  private readonly stop = new AbortController();
  private started = false;
  private confirmedRun: m.Run | null = null;

  /** @internal */
  constructor(
    private readonly source: ConnectionSource,
    runId: string,
    private readonly policy: ResolvedRetryPolicy,
    private readonly options: WatchOptions,
  ) {
    this.core = new WatchCore<KeptEvent>(
      runId,
      options.afterSequence ?? 0,
      options.retry === undefined ? policy : resolveRetryPolicy(options.retry, "retry"),
      sameEvent,
      options.replayWindow,
    );
  }

  get runId(): string {
    return this.core.runId;
  }

  /** The sequence of the last delivered event: pass it as `afterSequence` to resume elsewhere. */
  get lastSequence(): number {
    return this.core.lastSequence;
  }

  /**
   * The ended run as `GetRun` confirmed it when the iteration ended by itself (after the
   * terminal event); `null` before, or when the watch failed or was stopped early.
   */
  get finalRun(): m.Run | null {
    return this.confirmedRun;
  }

  /** @internal */
  recordFinalRun(run: m.Run): void {
    this.confirmedRun = run;
  }

  /** Stops the stream. The run keeps going. */
  close(): void {
    this.stop.abort(new AbortedError("the watch was closed", { reason: "WATCH_CLOSED" }));
  }

  /** Stops the watch at the end of an `await using` block (the run goes on). */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
    return Promise.resolve();
  }

  /** Yields the run's events, each once and in order, until the run ends. */
  [Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    if (this.started) throw new TypeError("a Watch can be iterated only once; start another with runs.watch");
    this.started = true;
    return new WatchIterator(this, this.core, this.source, this.options);
  }

  /** @internal */
  stopped(): boolean {
    return this.stop.signal.aborted || this.options.signal?.aborted === true;
  }

  /** @internal */
  get closedByCaller(): boolean {
    return this.stop.signal.aborted;
  }

  /** @internal */
  get stopSignal(): AbortSignal {
    return this.stop.signal;
  }
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * The stream loop as a plain async iterator (one await per event: an async generator would
 * add a promise hop per event on the hot path).
 */
class WatchIterator implements AsyncIterator<RunEvent> {
  private stream: AsyncIterator<WatchRunResponse> | null = null;
  private connection: Connection | null = null;
  private attempt: AbortController | null = null;
  private finished = false;
  private lastActivity = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private idleFired = false;
  /** Where the next stream starts: the caller's cursor, then each resume plan's (as in Rust). */
  private resumeAfter: number;

  constructor(
    private readonly watch: Watch,
    private readonly core: WatchCore<KeptEvent>,
    private readonly source: ConnectionSource,
    private readonly options: WatchOptions,
  ) {
    this.resumeAfter = core.lastSequence;
  }

  async next(): Promise<IteratorResult<RunEvent>> {
    const core = this.core;
    try {
      for (;;) {
        if (this.finished || this.watch.stopped()) return this.end();
        const stream = this.stream ?? (await this.open());
        let result: IteratorResult<WatchRunResponse>;
        try {
          result = await stream.next();
        } catch (error) {
          await this.onStreamError(error);
          continue;
        }
        if (result.done === true) {
          await this.onCleanClose();
          continue;
        }
        if (this.idleTimer !== undefined) this.lastActivity = performance.now();
        const event = result.value.event;
        if (event === undefined) continue;
        const sequence = convert.safeNumber(event.sequence, "event.sequence");
        if (core.onEvent(event.runId, sequence, keepForReplay(event), estimateEventBytes(event), event.payload.case === "terminated") === "deliver") {
          return { done: false, value: convert.runEvent(event, sequence) };
        }
      }
    } catch (error) {
      this.closeStream();
      this.finished = true;
      throw error;
    }
  }

  async return(): Promise<IteratorResult<RunEvent>> {
    this.finished = true;
    this.closeStream();
    return Promise.resolve(DONE);
  }

  private end(): IteratorResult<RunEvent> {
    this.closeStream();
    this.finished = true;
    if (!this.watch.closedByCaller && this.options.signal?.aborted === true) {
      throw new AbortedError("the watch was aborted by the caller", { code: "CANCELLED", reason: "ABORTED" });
    }
    return DONE;
  }

  private async open(): Promise<AsyncIterator<WatchRunResponse>> {
    const connection = await this.source.connection();
    this.connection = connection;
    const request = buildWatchRun(this.core.runId, this.resumeAfter);
    const attempt = new AbortController();
    this.attempt = attempt;
    const signals = [this.watch.stopSignal, attempt.signal];
    if (this.options.signal !== undefined) signals.push(this.options.signal);
    const idleMs = this.options.idleTimeoutMs;
    if (idleMs !== undefined) {
      // One coarse timer per stream instead of re-arming a timer on every event.
      this.lastActivity = performance.now();
      const check = Math.max(10, Math.min(1000, idleMs / 4));
      this.idleTimer = setInterval(() => {
        if (performance.now() - this.lastActivity >= idleMs) {
          this.idleFired = true;
          attempt.abort();
        }
      }, check);
      this.idleTimer.unref();
    }
    const stream = openServerStream(connection.transport, RunService.method.watchRun, request, AbortSignal.any(signals));
    this.stream = stream;
    return stream;
  }

  private closeStream(): void {
    clearInterval(this.idleTimer);
    this.idleTimer = undefined;
    this.attempt?.abort();
    this.attempt = null;
    this.stream = null;
  }

  private async onStreamError(error: unknown): Promise<void> {
    const connection = this.connection;
    this.closeStream();
    if (this.idleFired) {
      throw new WatchIdleTimeoutError(`no event for ${this.options.idleTimeoutMs ?? 0} ms`, { reason: "WATCH_IDLE_TIMEOUT" });
    }
    if (error instanceof ColossusError && error.code === null) throw error;
    if (this.watch.stopped() || connection === null) return;
    const mapped = connection.mapError(error);
    if (!isRetryable(mapped)) throw mapped;
    await this.pause(this.core.onRetryableFailure(!isUnreachable(mapped)), mapped, connection);
  }

  private async onCleanClose(): Promise<void> {
    const connection = this.connection;
    this.closeStream();
    if (this.watch.stopped() || connection === null) return;
    // A clean close proves nothing until GetRun agrees (S1).
    const runId = this.core.runId;
    const run = await connection.read(async () => convert.run((await connection.runs.getRun({ runId }, connection.callOptions(undefined))).run), this.options.signal);
    if (this.core.onCleanClose(run) === "complete") {
      this.finished = true;
      this.watch.recordFinalRun(run);
      return;
    }
    await this.pause(this.core.onRetryableFailure(), null, connection);
  }

  private async pause(resume: Resume | null, cause: ColossusError | null, connection: Connection): Promise<void> {
    if (resume === null) {
      throw cause ?? new TransportError("the watch kept closing before the run ended", { reason: "WATCH_RECONNECTS_EXHAUSTED" });
    }
    // The reopened stream starts where the core's plan says, never from another copy.
    this.resumeAfter = resume.afterSequence;
    const info: ReconnectInfo = { runId: this.core.runId, attempt: resume.attempt, delayMs: resume.delayMs, afterSequence: resume.afterSequence, cause };
    connection.options.logger?.info("watch reconnecting", { runId: info.runId, afterSequence: info.afterSequence, attempt: info.attempt, delayMs: Math.round(info.delayMs) });
    this.options.onReconnect?.(info);
    const signal = this.options.signal === undefined ? this.watch.stopSignal : AbortSignal.any([this.watch.stopSignal, this.options.signal]);
    await sleep(resume.delayMs, signal).catch(() => undefined);
  }
}
