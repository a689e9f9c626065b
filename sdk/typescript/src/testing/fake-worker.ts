/**
 * An in-process fake Colossus worker for application unit tests (as Python's
 * `colossus_agent_client.testing.FakeWorker`). It is a real gRPC server on loopback TLS 1.3
 * with a throw-away certificate, so the SDK runs its whole connect sequence against it:
 * discovery files, pin checks, the TLS policy, the bearer and `GetServerInfo`. Runs are
 * scripted: each created run has already ended with the events you queued, and faults can be
 * injected per call.
 */
import { create } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { RunService, type WatchRunResponse } from "../gen/colossus/api/v1alpha1/run_service_pb.js";
import { RunEventSchema, RunMode, RunSchema, RunStatus as PbRunStatus, type Run as PbRun, type RunEvent as PbRunEvent } from "../gen/colossus/api/v1alpha1/runs_pb.js";
import { DeploymentMode, ServerInfoSchema, SystemService } from "../gen/colossus/api/v1alpha1/system_pb.js";
import { Fault, type FakeMethod, type FaultCode } from "./faults.js";
import { makeTestLeaf, type TestLeaf } from "./leaf.js";

/** The instance ID the fake worker reports. */
export const FAKE_INSTANCE_ID = "wkr_fake";
const DOMAIN = "colossus.api.v1alpha1";
const TERMINAL: ReadonlySet<string> = new Set<TerminalStatus>(["SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED", "OUTCOME_UNKNOWN"]);

/**
 * How a run ended. (The testing entry point declares its own types, structurally the SDK's,
 * so its bundle shares no declaration chunk with the SDK's.)
 */
export type TerminalStatus = "SUCCEEDED" | "FAILED" | "CANCELLED" | "INTERRUPTED" | "OUTCOME_UNKNOWN";

/** What {@link FakeWorker.daemonOptions} returns: a `DaemonOptions` for `Client.connect`. */
export interface FakeDaemonOptions {
  readonly publicApiDir: string;
  readonly expectedInstanceId: string;
  readonly expectedCertificateSha256: string;
  readonly credentials: { getBearer(): string };
  readonly retry: { readonly maxAttempts: number; readonly initialBackoffMs: number; readonly maxBackoffMs: number };
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
}

/** Options of {@link FakeWorker.start}. */
export interface FakeWorkerOptions {
  /** The optional features it advertises. Default `["plans.continue", "research"]`. */
  readonly capabilities?: readonly string[];
}

/** How a scripted run ends. */
export interface ScriptOptions {
  /** Its terminal status. Default `"SUCCEEDED"`. */
  readonly status?: TerminalStatus;
}

function errorInfo(reason: string): Uint8Array {
  return new BinaryWriter().tag(1, WireType.LengthDelimited).string(reason).tag(2, WireType.LengthDelimited).string(DOMAIN).finish();
}

function retryInfo(delayMs: number): Uint8Array {
  const seconds = Math.floor(delayMs / 1000);
  const nanos = Math.round((delayMs - seconds * 1000) * 1e6);
  const duration = new BinaryWriter().tag(1, WireType.Varint).int64(seconds).tag(2, WireType.Varint).int32(nanos).finish();
  return new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(duration).finish();
}

const CODES: Readonly<Record<FaultCode, Code>> = {
  CANCELLED: Code.Canceled,
  UNKNOWN: Code.Unknown,
  INVALID_ARGUMENT: Code.InvalidArgument,
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
  NOT_FOUND: Code.NotFound,
  ALREADY_EXISTS: Code.AlreadyExists,
  PERMISSION_DENIED: Code.PermissionDenied,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  ABORTED: Code.Aborted,
  OUT_OF_RANGE: Code.OutOfRange,
  UNIMPLEMENTED: Code.Unimplemented,
  INTERNAL: Code.Internal,
  UNAVAILABLE: Code.Unavailable,
  DATA_LOSS: Code.DataLoss,
  UNAUTHENTICATED: Code.Unauthenticated,
};

/** A status with the contract's `ErrorInfo` (and a `RetryInfo` when a delay is given). */
function failure(code: FaultCode, reason: string | null, retryDelayMs: number | null = null): ConnectError {
  const error = new ConnectError(reason ?? code, CODES[code]);
  if (reason !== null) error.details.push({ type: "google.rpc.ErrorInfo", value: errorInfo(reason) });
  if (retryDelayMs !== null) error.details.push({ type: "google.rpc.RetryInfo", value: retryInfo(retryDelayMs) });
  return error;
}

/**
 * A scripted stand-in for a Colossus worker, for your application's unit tests.
 *
 * ```ts
 * await using worker = await FakeWorker.start();
 * worker.script(["Hello", ", world"]);
 * await using client = await Client.connect(worker.daemonOptions());
 * const { run } = await client.runs.create("hi");
 * const done = await client.runs.wait(run.runId); // done.result?.outputText === "Hello, world"
 * ```
 *
 * Every run it creates has already ended: its events are the queued output texts, then a
 * terminal event with the queued status. `calls` lists the RPCs received, in order. It serves
 * the system and run services (no artifacts).
 */
export class FakeWorker implements AsyncDisposable {
  /** The RPC method names received, in order (for assertions). */
  readonly calls: string[] = [];
  private readonly faults: Fault[] = [];
  private readonly scripts: { texts: readonly string[]; status: TerminalStatus }[] = [];
  private readonly runs = new Map<string, PbRun>();
  private readonly events = new Map<string, PbRunEvent[]>();
  private readonly byKey = new Map<string, string>();
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private readonly bearer = `fake-${randomBytes(32).toString("base64url")}`;
  private server: http2.Http2SecureServer | null = null;
  private closing: Promise<void> | null = null;
  /** The loopback port it listens on. */
  port = 0;
  /** Its discovery folder (owner-only; removed by `close`). */
  folder = "";

  private constructor(
    /** The optional features it advertises. */
    readonly capabilities: readonly string[],
    private readonly leaf: TestLeaf,
  ) {}

  /** Starts a fake worker on `127.0.0.1` and writes its discovery files. */
  static async start(options: FakeWorkerOptions = {}): Promise<FakeWorker> {
    const worker = new FakeWorker(options.capabilities ?? ["plans.continue", "research"], makeTestLeaf());
    await worker.listen();
    return worker;
  }

  /**
   * Options that connect to this worker, with fast retries and 10 s timeouts; spread them to
   * change a field: `Client.connect({ ...worker.daemonOptions(), timeoutMs: 2_000 })`.
   */
  daemonOptions(): FakeDaemonOptions {
    const bearer = this.bearer;
    return {
      publicApiDir: this.folder,
      expectedInstanceId: FAKE_INSTANCE_ID,
      expectedCertificateSha256: this.leaf.sha256,
      credentials: { getBearer: () => bearer },
      retry: { maxAttempts: 4, initialBackoffMs: 10, maxBackoffMs: 50 },
      timeoutMs: 10_000,
      connectTimeoutMs: 10_000,
    };
  }

  /** Queues what the next created run produces: output texts, then a terminal status. */
  script(outputs: readonly string[] = [], options: ScriptOptions = {}): void {
    this.scripts.push({ texts: [...outputs], status: terminal(options.status) });
  }

  /** Stores an already finished run, as if created earlier (for listing tests); returns its ID. */
  addRun(outputs: readonly string[] = [], options: ScriptOptions = {}): string {
    return this.store(outputs, terminal(options.status), "");
  }

  /** Arms faults; each is used once, by the next call it applies to, in the order given per method. */
  inject(...faults: Fault[]): void {
    this.faults.push(...faults);
  }

  /** Stops serving and removes the discovery folder. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async shutdown(): Promise<void> {
    const server = this.server;
    if (server !== null) {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        for (const session of this.sessions) session.destroy();
      });
    }
    if (this.folder !== "") await fs.rm(this.folder, { recursive: true, force: true });
  }

  /** Records the call, checks the bearer, and returns the fault meant for it. */
  private enter(method: FakeMethod, authorization: string | null): Fault | null {
    this.calls.push(method);
    const index = this.faults.findIndex((f) => f.method === method);
    const fault = index >= 0 ? (this.faults.splice(index, 1)[0] ?? null) : null;
    if (authorization !== `Bearer ${this.bearer}`) throw failure("UNAUTHENTICATED", "CREDENTIAL_INVALID");
    if (fault?.kind === "fail") throw failure(fault.code, fault.reason);
    if (fault?.kind === "rate_limit") throw failure("RESOURCE_EXHAUSTED", "CREATE_RATE_LIMIT", fault.retryDelayMs);
    return fault;
  }

  private run(runId: string): PbRun {
    const run = this.runs.get(runId);
    if (run === undefined) throw failure("NOT_FOUND", "RUN_NOT_FOUND");
    return run;
  }

  private routes(router: ConnectRouter): void {
    const auth = (header: Headers): string | null => header.get("authorization");
    router.service(SystemService, {
      getServerInfo: (_request, context) => {
        this.enter("GetServerInfo", auth(context.requestHeader));
        return {
          serverInfo: create(ServerInfoSchema, {
            instanceId: FAKE_INSTANCE_ID,
            apiPackage: DOMAIN,
            apiVersion: "v1alpha1",
            apiMajor: 1,
            deploymentMode: DeploymentMode.SHARED_DAEMON,
            capabilities: [...this.capabilities],
            limits: {
              maxRequestBytes: 2n * 1024n * 1024n,
              maxResponseBytes: 4n * 1024n * 1024n,
              maxInputParts: 128,
              maxInputBytes: 1024n * 1024n,
              maxTurns: 100,
              defaultMaxTurns: 20,
              maxListPageSize: 3,
              maxListStatusFilters: 9,
              createRate: { refillPerSecond: 4, burst: 16 },
              createRatePerApplication: { refillPerSecond: 1, burst: 4 },
            },
            serverVersion: "colossus-sdk/testing FakeWorker",
          }),
        };
      },
    });
    router.service(RunService, {
      createRun: (request, context) => {
        const fault = this.enter("CreateRun", auth(context.requestHeader));
        const existing = this.byKey.get(request.idempotencyKey);
        let response;
        if (existing !== undefined) {
          response = { run: this.run(existing), replayed: true };
        } else {
          const next = this.scripts.shift() ?? { texts: [], status: "SUCCEEDED" as const };
          response = { run: this.run(this.store(next.texts, next.status, request.idempotencyKey)), replayed: false };
        }
        if (fault?.kind === "after_commit") throw failure("UNAVAILABLE", null);
        return response;
      },
      getRun: (request, context) => {
        const fault = this.enter("GetRun", auth(context.requestHeader));
        const run = this.run(request.runId);
        if (fault?.kind === "not_started") {
          return { run: create(RunSchema, { ...run, status: PbRunStatus.QUEUED, lastSequence: 0n, result: undefined }) };
        }
        return { run };
      },
      listRuns: (request, context) => {
        this.enter("ListRuns", auth(context.requestHeader));
        const wanted = new Set(request.statuses);
        const all = [...this.runs.values()].reverse().filter((r) => wanted.size === 0 || wanted.has(r.status));
        const start = Number(request.pageToken || "0");
        const size = Math.min(request.pageSize || 3, 3);
        return { runs: all.slice(start, start + size), nextPageToken: start + size < all.length ? String(start + size) : "" };
      },
      watchRun: (request, context) => this.watch(request.runId, request.afterSequence, this.enter("WatchRun", auth(context.requestHeader))),
      cancelRun: (request, context) => {
        this.enter("CancelRun", auth(context.requestHeader));
        return { run: this.run(request.runId) };
      },
      respondInteraction: (_request, context) => {
        // Scripted runs have already ended, so there is never a pending interaction.
        this.enter("RespondInteraction", auth(context.requestHeader));
        throw failure("NOT_FOUND", "INTERACTION_NOT_FOUND");
      },
    });
  }

  private async *watch(runId: string, after: bigint, fault: Fault | null): AsyncGenerator<Partial<WatchRunResponse>> {
    const events = this.events.get(runId);
    if (events === undefined) throw failure("NOT_FOUND", "RUN_NOT_FOUND");
    const pending = events.filter((e) => e.sequence > after);
    for (const [index, event] of pending.entries()) {
      if (fault !== null && index === fault.afterEvents) {
        if (fault.kind === "drop") throw failure("UNAVAILABLE", null);
        if (fault.kind === "gap") continue;
        if (fault.kind === "replay" && index > 0 && pending[0] !== undefined) yield { event: pending[0] };
      }
      yield { event };
      await Promise.resolve();
    }
  }

  private store(texts: readonly string[], status: TerminalStatus, key: string): string {
    const runId = `run_${this.runs.size + 1}`;
    const output = texts.join("");
    const pbStatus = PbRunStatus[status];
    const events = texts.map((text, i) => create(RunEventSchema, { runId, sequence: BigInt(i + 1), payload: { case: "outputDelta", value: { text } } }));
    events.push(
      create(RunEventSchema, {
        runId,
        sequence: BigInt(texts.length + 1),
        payload: { case: "terminated", value: { status: pbStatus, result: { outputText: output } } },
      }),
    );
    this.runs.set(
      runId,
      create(RunSchema, {
        runId,
        sessionId: `ses_${this.runs.size + 1}`,
        mode: RunMode.EXECUTE,
        role: "default",
        status: pbStatus,
        lastSequence: BigInt(events.length),
        idempotencyKey: key,
        maxTurns: 20,
        result: { outputText: output },
      }),
    );
    this.events.set(runId, events);
    if (key !== "") this.byKey.set(key, runId);
    return runId;
  }

  private async listen(): Promise<void> {
    const server = http2.createSecureServer(
      { cert: this.leaf.certPem, key: this.leaf.keyPem, minVersion: "TLSv1.3", allowHTTP1: false },
      connectNodeAdapter({
        routes: (router) => {
          this.routes(router);
        },
      }),
    );
    server.on("session", (session) => {
      this.sessions.add(session);
      session.on("close", () => this.sessions.delete(session));
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.folder = await fs.mkdtemp(path.join(os.tmpdir(), "colossus-fake-"));
    await fs.chmod(this.folder, 0o700);
    const descriptor = {
      endpoint: `https://127.0.0.1:${this.port}`,
      instance_id: FAKE_INSTANCE_ID,
      pid: process.pid,
      api_version: "v1alpha1",
      certificate_sha256: this.leaf.sha256,
    };
    await fs.writeFile(path.join(this.folder, "endpoint.json"), JSON.stringify(descriptor), { mode: 0o600, flag: "wx" });
    await fs.writeFile(path.join(this.folder, "certificate.pem"), this.leaf.certPem, { mode: 0o600, flag: "wx" });
  }
}

function terminal(status: TerminalStatus | undefined): TerminalStatus {
  const value = status ?? "SUCCEEDED";
  // Checked at run time too: a JavaScript caller has no type checker.
  if (!TERMINAL.has(value)) throw new TypeError(`a scripted run must end in a terminal status, not ${value as string}`);
  return value;
}
