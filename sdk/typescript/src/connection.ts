/**
 * The connect sequence (C1-C7) and the call helpers every resource uses. The order is the
 * same for both placements:
 *
 * 1. the target is known (daemon: discovery files checked against the provisioned
 *    identity; sidecar: bootstrap reply validated);
 * 2. a connection is opened and verified (TLS 1.3, pinned leaf, one certificate), with no
 *    bearer in existence yet;
 * 3. only then the bearer is loaded from its provider (C5);
 * 4. `GetServerInfo` is the first RPC; its answer is verified before anything else (C6);
 * 5. the caps become the advertised request and response limits (C7); from then on the
 *    channel refuses any request message over the request cap before sending it.
 */
import { createClient, type CallOptions, type Client as RpcClient, type Transport } from "@connectrpc/connect";
import * as convert from "./convert.js";
import { loadBearer, type CredentialProvider } from "./credentials.js";
import { isRetryable, isUnreachable, mapError, type MapContext } from "./status.js";
import { ClientClosedError, ColossusError, IncompatibleServerError, OutcomeUnknownError, TransportError } from "./errors.js";
import { ArtifactService } from "./gen/colossus/api/v1alpha1/artifacts_pb.js";
import { RunService } from "./gen/colossus/api/v1alpha1/run_service_pb.js";
import { SystemService } from "./gen/colossus/api/v1alpha1/system_pb.js";
import type { DeploymentMode, ServerInfo } from "./models.js";
import type { ResolvedClientOptions } from "./options.js";
import { Backoff, sleep, type ResolvedRetryPolicy } from "./retry.js";
import { Bearer } from "./transport/bearer.js";
import type { LeafCertificate } from "./transport/certificate.js";
import { Channel } from "./transport/channel.js";
import type { Endpoint } from "./transport/endpoint.js";

export const API_PACKAGE = "colossus.api.v1alpha1";
export const API_MAJOR = 1;
const REQUEST_HEADROOM = 64 * 1024;


/** A worker the caller decided to trust: where it is and what it must prove. */
export interface Target {
  readonly endpoint: Endpoint;
  readonly certificate: LeafCertificate;
  readonly expectedInstanceId: string;
  readonly expectedPin: string;
  readonly expectedMode: DeploymentMode;
}

/** C6: the first answer must name the provisioned instance, contract and placement. */
export function verifyServerInfo(info: ServerInfo, target: Target): void {
  const problems: string[] = [];
  if (info.instanceId !== target.expectedInstanceId) problems.push("instance_id");
  if (info.apiPackage !== API_PACKAGE) problems.push("api_package");
  if (info.apiMajor !== API_MAJOR) problems.push("api_major");
  if (info.deploymentMode !== target.expectedMode) problems.push("deployment_mode");
  if (problems.length > 0) {
    throw new IncompatibleServerError(`GetServerInfo disagrees with the expected worker: ${problems.join(", ")}`, {
      reason: "SERVER_INFO_MISMATCH",
      metadata: { fields: problems.join(",") },
    });
  }
}

/** Per-call options every public method accepts. */
export interface RequestOptions {
  /** Cancels the call. */
  readonly signal?: AbortSignal;
  /** Overrides the client's default timeout, in milliseconds (`null`: none). */
  readonly timeoutMs?: number | null;
}

/** A verified connection: the services, the server info, and the call helpers. */
export class Connection {
  readonly runs: RpcClient<typeof RunService>;
  readonly artifacts: RpcClient<typeof ArtifactService>;
  /** The transport under `runs` and `artifacts`, for calls read without the promise client. */
  readonly transport: Transport;

  constructor(
    private readonly channel: Channel,
    readonly serverInfo: ServerInfo,
    readonly options: ResolvedClientOptions,
  ) {
    const read = Math.min(options.maxResponseBytes, serverInfo.limits.maxResponseBytes || options.maxResponseBytes);
    const write = serverInfo.limits.maxRequestBytes > 0 ? serverInfo.limits.maxRequestBytes + REQUEST_HEADROOM : options.maxResponseBytes;
    channel.setRequestCap(serverInfo.limits.maxRequestBytes);
    const transport = channel.transport(read, write);
    this.transport = transport;
    this.runs = createClient(RunService, transport);
    this.artifacts = createClient(ArtifactService, transport);
  }

  get closed(): boolean {
    return this.channel.isClosed;
  }

  /** connect's call options from ours. */
  callOptions(request: RequestOptions | undefined, streaming = false): CallOptions {
    const timeout = request?.timeoutMs === undefined ? this.options.timeoutMs : request.timeoutMs;
    const result: { timeoutMs?: number; signal?: AbortSignal } = {};
    if (timeout !== null && !streaming) result.timeoutMs = timeout;
    if (request?.signal !== undefined) result.signal = request.signal;
    return result;
  }

  /** Maps a failure, preferring a trust failure of a freshly opened connection. */
  mapError(error: unknown, context: MapContext = {}): ColossusError {
    if (this.channel.isClosed && !(error instanceof ColossusError)) {
      return new ClientClosedError("the client was closed", { reason: "CLIENT_CLOSED", idempotencyKey: context.idempotencyKey ?? null });
    }
    const mapped = mapError(error, context);
    // The newest connection failed a trust check, so no call can have reached a worker
    // through it: whatever connect reports (UNAVAILABLE, INTERNAL...) is that refusal.
    const trust = this.channel.lastTrustFailure();
    if (trust !== null && mapped.code !== null) return trust;
    return lostConnectionAsUnavailable(mapped, error, this.channel);
  }

  /** Runs a read, retrying `UNAVAILABLE` under the policy. */
  async read<T>(attempt: () => Promise<T>, signal?: AbortSignal, policy: ResolvedRetryPolicy = this.options.retry): Promise<T> {
    return retryRead(attempt, policy, (e) => this.mapError(e, { signal }), signal);
  }

  close(): void {
    this.channel.close();
  }
}

/** Retries `attempt` while it fails with a retryable error and the policy allows. */
export async function retryRead<T>(
  attempt: () => Promise<T>,
  policy: ResolvedRetryPolicy,
  map: (error: unknown) => ColossusError,
  signal?: AbortSignal,
  retryable: (error: ColossusError) => boolean = isRetryable,
): Promise<T> {
  const backoff = new Backoff(policy);
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const mapped = map(error);
      if (!retryable(mapped)) throw mapped;
      const delay = backoff.next(!isUnreachable(mapped));
      if (delay === null) throw mapped;
      await sleep(delay, signal).catch(() => {
        throw map(error);
      });
    }
  }
}

/**
 * Whether a failure while connecting is retried: as a read's, except a refused connection
 * (`UNREACHABLE`), which ends the connect at once in every SDK.
 */
function connectRetryable(error: ColossusError): boolean {
  return isRetryable(error) && !isUnreachable(error);
}

/**
 * A CANCELLED that neither the caller nor the SDK asked for is a lost connection: when the
 * worker dies or restarts, Node closes every open stream with CANCEL, so the call got no
 * answer at all and reads may be retried like any UNAVAILABLE.
 */
export function lostConnectionAsUnavailable(mapped: ColossusError, error: unknown, channel: Channel): ColossusError {
  if (mapped.code !== "CANCELLED" || mapped.reason !== null || !channel.connectionLost()) return mapped;
  if (mapped instanceof OutcomeUnknownError) {
    // Still an unknown outcome, never retried; only the code is the lost connection's, as
    // in every SDK (S9).
    return new OutcomeUnknownError(mapped.message, { code: "UNAVAILABLE", idempotencyKey: mapped.idempotencyKey, cause: error });
  }
  return new TransportError(`the connection to the worker was lost (${mapped.message})`, { code: "UNAVAILABLE", cause: error });
}

/** Opens a verified connection to `target`; see the module comment for the order of checks. */
export async function openConnection(
  target: Target,
  credentials: CredentialProvider | Bearer,
  options: ResolvedClientOptions,
  signal?: AbortSignal,
): Promise<Connection> {
  const trace = options.traceContext;
  const channel = new Channel({
    target: { endpoint: target.endpoint, certificate: target.certificate, pin: target.expectedPin },
    handshakeTimeoutMs: options.connectTimeoutMs,
    headers:
      trace === undefined
        ? undefined
        : () => {
            const context = trace();
            if (context === null) return null;
            return context.tracestate === undefined
              ? { traceparent: context.traceparent }
              : { traceparent: context.traceparent, tracestate: context.tracestate };
          },
  });
  // An abort ends a connect mid-handshake too, not only between attempts.
  const onAbort = (): void => {
    channel.close();
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    // A connection the worker accepted and then dropped without a trust verdict (it died
    // mid-handshake) is retried like a read; a trust failure never is, and neither is a
    // refused connection here: nothing listens, which the caller should hear at once.
    await retryRead(
      () => channel.connect(),
      options.retry,
      (error) => (error instanceof ColossusError ? error : mapError(error, { signal })),
      signal,
      connectRetryable,
    );
    signal?.throwIfAborted();
    const bearer = credentials instanceof Bearer ? credentials : await loadBearer(credentials, signal);
    channel.setBearer(bearer);
    const system = createClient(SystemService, channel.transport(options.maxResponseBytes, options.maxResponseBytes));
    const map = (error: unknown): ColossusError =>
      channel.lastTrustFailure() ?? lostConnectionAsUnavailable(mapError(error, { signal }), error, channel);
    const info = await retryRead(
      async () => {
        const callOptions: { timeoutMs: number; signal?: AbortSignal } = { timeoutMs: options.connectTimeoutMs };
        if (signal !== undefined) callOptions.signal = signal;
        return convert.serverInfo((await system.getServerInfo({}, callOptions)).serverInfo);
      },
      options.retry,
      map,
      signal,
      // As above: a worker that went away under this call (a sidecar's that exited) is
      // heard at once, as in every SDK, not after the read budget's elapsed time.
      connectRetryable,
    );
    verifyServerInfo(info, target);
    options.logger?.info("connected to the Colossus worker", {
      endpoint: target.endpoint.url,
      instanceId: info.instanceId,
      deploymentMode: info.deploymentMode,
    });
    return new Connection(channel, info, options);
  } catch (error) {
    channel.close();
    throw error instanceof ColossusError ? error : mapError(error, { signal });
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}
