/** Options of the two placements. Every field is checked when the client is created. */
import { invalidArgument } from "./errors.js";
import type { CredentialProvider } from "./credentials.js";
import type { Logger } from "./logger.js";
import type { DeploymentMode } from "./models.js";
import { resolveRetryPolicy, type ResolvedRetryPolicy, type RetryPolicy } from "./retry.js";
import { isOpaqueId, isPin } from "./transport/grammar.js";

export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Defaults shared with the Python and Go SDKs (one concept, one value: docs/requirements.md). */
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESTARTS = 3;
export const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;
/** Delays between sidecar restarts: full jitter from 0.5 s, doubling up to 5 s. */
export const DEFAULT_RESTART_BACKOFF: ResolvedRetryPolicy = Object.freeze({
  maxAttempts: 4,
  initialBackoffMs: 500,
  maxBackoffMs: 5_000,
  multiplier: 2,
  maxElapsedMs: 30_000,
});

/** Returns the current W3C trace context, or `null`. */
export type TraceContextProvider = () => { readonly traceparent: string; readonly tracestate?: string } | null;

/** Behaviour shared by both placements. */
export interface ClientOptions {
  /** Default per-call timeout in milliseconds (`null`: none). Default 30,000. Watches use `idleTimeoutMs`. */
  readonly timeoutMs?: number | null;
  /** Time allowed for the handshake and `GetServerInfo` at connect, in milliseconds. Default 10,000. */
  readonly connectTimeoutMs?: number;
  /** Retry policy for reads and watch reconnects. */
  readonly retry?: RetryPolicy;
  /** The largest inbound message accepted; lowered to the worker's advertised cap when smaller. */
  readonly maxResponseBytes?: number;
  /** Receives the SDK's log lines (connections, reconnects, restarts). Default: silent. */
  readonly logger?: Logger;
  /** Optional W3C trace context, sent as metadata on every call and in `CreateRunRequest`. */
  readonly traceContext?: TraceContextProvider;
}

/** Connect to an installed shared worker. The four inputs are independent (C1-C5). */
export interface DaemonOptions extends ClientOptions {
  /** The worker's `--public-api-dir` (owner-only). */
  readonly publicApiDir: string;
  /** The instance ID printed at enrolment. */
  readonly expectedInstanceId: string;
  /** The certificate SHA-256 printed at enrolment (64 lower-case hex). Never read it back from the folder. */
  readonly expectedCertificateSha256: string;
  /** Where the bearer comes from; asked only after every trust check passed. */
  readonly credentials: CredentialProvider;
  /** What `GetServerInfo` must report. Default `SHARED_DAEMON`. */
  readonly expectedDeploymentMode?: DeploymentMode;
}

/** Start and supervise a private worker (sidecar placement). */
export interface SidecarOptions extends ClientOptions {
  /** The worker program, e.g. `colossus-reference-worker`; looked up on `PATH` when bare. */
  readonly executable: string;
  /** Non-secret arguments placed before the bootstrap flags. */
  readonly extraArgs?: readonly string[];
  /** The application the one-use bearer is issued to. */
  readonly applicationId: string;
  /** Exact scopes to grant. Default: execute, read, control, respond to prompts. */
  readonly scopes?: readonly string[];
  /** Logical roles (the first is the default role). Default `["default"]`. */
  readonly roles?: readonly string[];
  /** Tools to grant (empty denies all). */
  readonly tools?: readonly string[];
  /** An existing 0700 folder you own, kept across restarts; default a private temporary one removed on close. */
  readonly stateDir?: string;
  /** Time allowed for the bootstrap reply, in milliseconds. Default 30,000. */
  readonly startupTimeoutMs?: number;
  /** Unexpected exits restarted at most this many times (0-3). Default 3. */
  readonly maxRestarts?: number;
  /** Delays between restarts. Default: from 500 ms doubling up to 5,000 ms, full jitter. */
  readonly restartBackoff?: RetryPolicy;
  /** Time the worker gets to exit after the pipe closes before SIGTERM then SIGKILL, in milliseconds. Default 5,000. */
  readonly shutdownGraceMs?: number;
  /** Let the worker write to this process's stderr. Default false. */
  readonly inheritStderr?: boolean;
}

/** Client options with every default applied. */
export interface ResolvedClientOptions {
  readonly timeoutMs: number | null;
  readonly connectTimeoutMs: number;
  readonly retry: ResolvedRetryPolicy;
  readonly maxResponseBytes: number;
  readonly logger: Logger | undefined;
  readonly traceContext: TraceContextProvider | undefined;
}

function positive(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`${field} must be a positive number of milliseconds`, field);
  }
  return value;
}

export function resolveClientOptions(options: ClientOptions): ResolvedClientOptions {
  const timeoutMs = options.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : options.timeoutMs === null ? null : positive(options.timeoutMs, "timeoutMs");
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 1024) {
    throw invalidArgument("maxResponseBytes must be an integer of at least 1024", "maxResponseBytes");
  }
  return Object.freeze({
    timeoutMs,
    connectTimeoutMs: positive(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, "connectTimeoutMs"),
    retry: resolveRetryPolicy(options.retry),
    maxResponseBytes,
    logger: options.logger,
    traceContext: options.traceContext,
  });
}

export function checkDaemonOptions(options: DaemonOptions): void {
  if (typeof options.publicApiDir !== "string" || options.publicApiDir.length === 0) {
    throw invalidArgument("publicApiDir must be a non-empty path", "publicApiDir");
  }
  if (!isOpaqueId(options.expectedInstanceId)) {
    throw invalidArgument("expectedInstanceId must be 1-64 characters of [A-Za-z0-9_-]", "expectedInstanceId");
  }
  if (!isPin(options.expectedCertificateSha256)) {
    throw invalidArgument("expectedCertificateSha256 must be 64 lower-case hex characters", "expectedCertificateSha256");
  }
  if (typeof (options.credentials as Partial<CredentialProvider> | undefined)?.getBearer !== "function") {
    throw invalidArgument("credentials must be a CredentialProvider", "credentials");
  }
  const mode = options.expectedDeploymentMode ?? "SHARED_DAEMON";
  if (mode !== "SHARED_DAEMON" && mode !== "SIDECAR") {
    throw invalidArgument("expectedDeploymentMode must be SHARED_DAEMON or SIDECAR", "expectedDeploymentMode");
  }
}

export function checkSidecarOptions(options: SidecarOptions): void {
  if (typeof options.executable !== "string" || options.executable.length === 0) {
    throw invalidArgument("executable must be a non-empty path or program name", "executable");
  }
  if (!isOpaqueId(options.applicationId)) {
    throw invalidArgument("applicationId must be 1-64 characters of [A-Za-z0-9_-]", "applicationId");
  }
  const restarts = options.maxRestarts ?? DEFAULT_MAX_RESTARTS;
  if (!Number.isInteger(restarts) || restarts < 0 || restarts > 3) {
    throw invalidArgument("maxRestarts must be an integer from 0 to 3", "maxRestarts");
  }
  for (const field of ["scopes", "roles", "tools", "extraArgs"] as const) {
    const list = options[field];
    if (list !== undefined && (!Array.isArray(list) || !list.every((v) => typeof v === "string"))) {
      throw invalidArgument(`${field} must be a list of strings`, field);
    }
  }
  if (options.stateDir !== undefined && (typeof options.stateDir !== "string" || !options.stateDir.startsWith("/"))) {
    throw invalidArgument("stateDir must be an absolute path", "stateDir");
  }
  resolveRetryPolicy({ ...DEFAULT_RESTART_BACKOFF, ...options.restartBackoff }, "restartBackoff");
  if (options.startupTimeoutMs !== undefined) positive(options.startupTimeoutMs, "startupTimeoutMs");
  if (options.shutdownGraceMs !== undefined) positive(options.shutdownGraceMs, "shutdownGraceMs");
}
