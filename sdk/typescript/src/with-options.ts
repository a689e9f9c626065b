/**
 * `client.withOptions(...)`: a client with other defaults over the same connection, as
 * Python's `with_options` and Go's `WithOptions`. Only the defaults a call reads from its
 * connection change (per-call timeout, read and reconnect policy); trust, credentials,
 * the channel and a sidecar's worker stay shared.
 */
import type { Connection } from "./connection.js";
import type { ResolvedClientOptions } from "./options.js";
import { resolveClientOptions } from "./options.js";
import type { RetryPolicy } from "./retry.js";
import type { ConnectionSource } from "./watch.js";

/** What `withOptions` can change; an omitted field keeps the parent client's value. */
export interface DerivedClientOptions {
  /** Default per-call timeout in milliseconds (`null`: none). */
  readonly timeoutMs?: number | null;
  /** Retry policy for reads and watch reconnects (unset fields take the defaults). */
  readonly retry?: RetryPolicy;
}

/** The parent's source, whose connections are seen with the changed options. */
export class DerivedSource implements ConnectionSource {
  private readonly views = new WeakMap<Connection, Connection>();

  constructor(
    private readonly parent: ConnectionSource & { readonly current: Connection; close(): Promise<void> },
    private readonly changes: DerivedClientOptions,
  ) {
    // Checked now, so a bad value fails at withOptions and not at the first call.
    derive(parent.current.options, changes);
  }

  get current(): Connection {
    return this.view(this.parent.current);
  }

  async connection(): Promise<Connection> {
    return this.view(await this.parent.connection());
  }

  close(): Promise<void> {
    return this.parent.close();
  }

  private view(connection: Connection): Connection {
    let view = this.views.get(connection);
    if (view === undefined) {
      // The connection's methods read `this.options`; the view shadows only that field.
      view = Object.create(connection, {
        options: { value: derive(connection.options, this.changes), enumerable: true },
      }) as Connection;
      this.views.set(connection, view);
    }
    return view;
  }
}

function derive(base: ResolvedClientOptions, changes: DerivedClientOptions): ResolvedClientOptions {
  const checked = resolveClientOptions({
    timeoutMs: changes.timeoutMs === undefined ? base.timeoutMs : changes.timeoutMs,
    connectTimeoutMs: base.connectTimeoutMs,
    maxResponseBytes: base.maxResponseBytes,
    ...(changes.retry === undefined ? { retry: base.retry } : { retry: changes.retry }),
  });
  return Object.freeze({ ...base, timeoutMs: checked.timeoutMs, retry: checked.retry });
}
