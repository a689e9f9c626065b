/** `Client`: the entry point for both placements. */
import { inspect } from "node:util";
import { Artifacts } from "./artifacts.js";
import { openConnection, type Connection } from "./connection.js";
import { ClientClosedError, SidecarError, TransportError } from "./errors.js";
import type { ServerInfo } from "./models.js";
import { checkDaemonOptions, checkSidecarOptions, resolveClientOptions, type DaemonOptions, type SidecarOptions } from "./options.js";
import { Runs } from "./runs.js";
import { SidecarSupervisor } from "./sidecar.js";
import type { BootstrapReply } from "./sidecar-bootstrap.js";
import { discover } from "./transport/descriptor.js";
import type { ConnectionSource } from "./watch.js";
import { DerivedSource, type DerivedClientOptions } from "./with-options.js";

/** Extra options of the two factories. */
export interface ConnectOptions {
  /** Cancels connecting (and, for a sidecar, starting the worker: it is then stopped). */
  readonly signal?: AbortSignal;
}

class DaemonSource implements ConnectionSource {
  constructor(readonly current: Connection) {}
  closed = false;
  connection(): Promise<Connection> {
    if (this.closed) return Promise.reject(new ClientClosedError("the client was closed", { reason: "CLIENT_CLOSED" }));
    return Promise.resolve(this.current);
  }
  close(): Promise<void> {
    this.closed = true;
    this.current.close();
    return Promise.resolve();
  }
}

class SidecarSource implements ConnectionSource {
  closed = false;
  private pending: Promise<Connection> | null = null;
  private failure: SidecarError | null = null;

  constructor(
    private readonly supervisor: SidecarSupervisor,
    public current: Connection,
  ) {}

  connection(): Promise<Connection> {
    if (this.closed) return Promise.reject(new ClientClosedError("the client was closed", { reason: "CLIENT_CLOSED" }));
    // Once the restart budget is spent, every later call fails with the same typed error.
    if (this.failure !== null) return Promise.reject(this.failure);
    if (!this.supervisor.needsRestart()) return Promise.resolve(this.current);
    this.pending ??= this.restart().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  private async restart(): Promise<Connection> {
    this.current.close();
    try {
      const process = await this.supervisor.restart();
      this.current = await connectSidecar(this.supervisor, process.reply);
      return this.current;
    } catch (error) {
      if (error instanceof SidecarError && error.reason === "SIDECAR_RESTARTS_EXHAUSTED") this.failure = error;
      throw error;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.current.close();
    await this.supervisor.close();
  }
}

async function connectSidecar(supervisor: SidecarSupervisor, reply: BootstrapReply, signal?: AbortSignal): Promise<Connection> {
  const options = resolveClientOptions(supervisor.options);
  // A worker that exits ends the connect at once, even when its socket lives on in another
  // process and would keep the handshake waiting until the connect timeout.
  const exited = supervisor.process?.exitSignal();
  const signals = [signal, exited].filter((s): s is AbortSignal => s !== undefined);
  try {
    return await openConnection(
      { endpoint: reply.endpoint, certificate: reply.certificate, expectedInstanceId: reply.instanceId, expectedPin: reply.certificate.sha256, expectedMode: "SIDECAR" },
      reply.bearer,
      options,
      signals.length === 0 ? undefined : AbortSignal.any(signals),
    );
  } catch (error) {
    if (exited?.aborted !== true || signal?.aborted === true) throw error;
    // As Python reports it: the worker went away, nothing listens for this connect.
    throw new TransportError("the sidecar worker exited while the client connected", { code: "UNAVAILABLE", reason: "UNREACHABLE", cause: error });
  }
}

/**
 * A client of one Colossus worker. Create it with {@link Client.connect} (daemon) or
 * {@link Client.startSidecar}; close it with `close()` or `await using`.
 */
export class Client implements AsyncDisposable {
  /** Runs: create, get, list, watch, cancel, respond. */
  readonly runs: Runs;
  /** Artifacts: upload, download (needs the `artifacts` capability). */
  readonly artifacts: Artifacts;
  private closing: Promise<void> | null = null;

  private constructor(private readonly source: DaemonSource | SidecarSource | DerivedSource) {
    const retry = source.current.options.retry;
    this.runs = new Runs(source, retry);
    this.artifacts = new Artifacts(source);
  }

  /** Connects to an installed worker after every trust check (C1-C6) passed. */
  static async connect(options: DaemonOptions, extra: ConnectOptions = {}): Promise<Client> {
    checkDaemonOptions(options);
    const resolved = resolveClientOptions(options);
    const found = await discover(options.publicApiDir, options.expectedInstanceId, options.expectedCertificateSha256);
    const connection = await openConnection(
      {
        endpoint: found.descriptor.endpoint,
        certificate: found.certificate,
        expectedInstanceId: options.expectedInstanceId,
        expectedPin: options.expectedCertificateSha256,
        expectedMode: options.expectedDeploymentMode ?? "SHARED_DAEMON",
      },
      options.credentials,
      resolved,
      extra.signal,
    );
    return new Client(new DaemonSource(connection));
  }

  /** Starts a private worker, bootstraps it over pipes and connects to it. */
  static async startSidecar(options: SidecarOptions, extra: ConnectOptions = {}): Promise<Client> {
    checkSidecarOptions(options);
    resolveClientOptions(options);
    const supervisor = await SidecarSupervisor.create(options);
    try {
      let process = await supervisor.start(extra.signal);
      for (;;) {
        try {
          const connection = await connectSidecar(supervisor, process.reply, extra.signal);
          return new Client(new SidecarSource(supervisor, connection));
        } catch (error) {
          // A worker that died while we connected is replaced like one that dies later,
          // within the same budget; any other failure is the caller's to see.
          if (extra.signal?.aborted === true || error instanceof SidecarError || !(await supervisor.diedWhileConnecting())) {
            throw error;
          }
          process = await supervisor.restart();
        }
      }
    } catch (error) {
      await supervisor.close();
      throw error;
    }
  }

  /**
   * A client with other defaults (per-call `timeoutMs`, read and reconnect `retry`) over
   * this client's connection: no new connection, no new trust checks. It shares the
   * connection (and a sidecar's worker), so closing either client closes both.
   */
  withOptions(options: DerivedClientOptions): Client {
    return new Client(new DerivedSource(this.source, options));
  }

  /** The verified `GetServerInfo` answer: identity, capabilities and limits. */
  get serverInfo(): ServerInfo {
    return this.source.current.serverInfo;
  }

  /** Closes the connection (and stops a sidecar's worker). Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.source.close();
    return this.closing;
  }

  /** Closes the client at the end of an `await using` block, as `close()` does. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** `util.inspect` shows the summary, never the bearer. */
  [inspect.custom](): string {
    return `Client(instance=${this.serverInfo.instanceId}, mode=${this.serverInfo.deploymentMode})`;
  }

  /** The non-secret facts about the connection, for structured logs. */
  toJSON(): Record<string, unknown> {
    return { instanceId: this.serverInfo.instanceId, deploymentMode: this.serverInfo.deploymentMode };
  }
}

