/**
 * The gRPC channel: connect-node over HTTP/2, every connection opened by
 * {@link openVerifiedSocket}, the bearer added by one interceptor once it is loaded, and
 * message caps (C7): every request message is held to the advertised request cap by
 * another interceptor on every transport. The first connection is opened and verified before any bearer
 * exists, so the bearer is loaded only after the live handshake passed (C5).
 */
import type { Interceptor, Transport } from "@connectrpc/connect";
import { Http2SessionManager } from "@connectrpc/connect-node";
import { ClientClosedError, TransportError, type TrustError } from "../errors.js";
import type { Bearer } from "./bearer.js";
import { createGrpcStreamingTransport } from "./grpc-transport.js";
import { requestCapInterceptor } from "./request-cap.js";
import { openVerifiedSocket, type PinnedTarget } from "./verified-socket.js";

export interface ChannelOptions {
  readonly target: PinnedTarget;
  readonly handshakeTimeoutMs: number;
  /** Extra metadata for every call (trace context). */
  readonly headers?: (() => Readonly<Record<string, string>> | null) | undefined;
}

const REFUSED = new Set(["ECONNREFUSED", "ENOENT", "EHOSTUNREACH", "ENETUNREACH"]);

function isRefused(error: (Error & { code?: unknown }) | undefined): boolean {
  return error === undefined || (typeof error.code === "string" && REFUSED.has(error.code));
}

/** One HTTP/2 connection manager shared by every transport of a client. */
export class Channel {
  private bearer: Bearer | null = null;
  private trustFailure: TrustError | null = null;
  private connectionError: Error | null = null;
  private socket: { readonly destroyed: boolean; readonly readableEnded: boolean } | null = null;
  private closed = false;
  private requestCap = 0;
  private readonly manager: Http2SessionManager;
  private readonly authorize: Interceptor;
  private readonly capRequests = requestCapInterceptor(() => this.requestCap);

  constructor(private readonly options: ChannelOptions) {
    this.manager = new Http2SessionManager(
      options.target.endpoint.url,
      { idleConnectionTimeoutMs: 15 * 60 * 1000 },
      {
        createConnection: () => {
          this.trustFailure = null;
          this.connectionError = null;
          const socket = openVerifiedSocket(options.target, {
            alpn: ["h2"],
            handshakeTimeoutMs: options.handshakeTimeoutMs,
            onTrustFailure: (error) => {
              this.trustFailure = error;
            },
          });
          socket.once("error", (error: Error) => {
            this.connectionError = error;
          });
          this.socket = socket;
          return socket;
        },
      },
    );
    this.authorize = (next) => (request) => {
      const bearer = this.bearer;
      if (bearer === null) throw new ClientClosedError("no bearer is loaded on this channel", { reason: "CLIENT_CLOSED" });
      request.header.set("authorization", bearer.authorization());
      const extra = this.options.headers?.();
      if (extra) for (const [key, value] of Object.entries(extra)) request.header.set(key, value);
      return next(request);
    };
  }

  /**
   * Opens and verifies a connection without sending any request. A failure that is not a
   * trust failure is a retryable `UNAVAILABLE`; its reason is `UNREACHABLE` only when
   * nothing listened (the connection was refused).
   */
  async connect(): Promise<void> {
    const state = await this.manager.connect();
    if (this.trustFailure !== null) throw this.trustFailure;
    if (state === "error") {
      const cause = this.connectionError ?? undefined;
      throw new TransportError("cannot connect to the worker", {
        code: "UNAVAILABLE",
        reason: isRefused(cause) ? "UNREACHABLE" : null,
        ...(cause === undefined ? {} : { cause }),
      });
    }
  }

  /** Makes the bearer available to the interceptor (after the trust checks). */
  setBearer(bearer: Bearer): void {
    this.bearer = bearer;
  }

  /** Holds every later request message to the worker's advertised cap (0: none). */
  setRequestCap(bytes: number): void {
    this.requestCap = bytes;
  }

  /** A transport with the given caps over the shared connection. */
  transport(readMaxBytes: number, writeMaxBytes: number): Transport {
    return createGrpcStreamingTransport({
      baseUrl: this.options.target.endpoint.url,
      sessionManager: this.manager,
      interceptors: [this.capRequests, this.authorize],
      readMaxBytes,
      writeMaxBytes,
    });
  }

  /**
   * True when the newest connection is gone (the worker died or restarted). Node then closes
   * every open HTTP/2 stream with the code CANCEL, which is a lost connection, not a
   * cancellation anyone asked for.
   */
  connectionLost(): boolean {
    const socket = this.socket;
    return socket !== null && (socket.destroyed || socket.readableEnded);
  }

  /** The trust failure of the newest connection attempt, if it failed one. */
  lastTrustFailure(): TrustError | null {
    return this.trustFailure;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.bearer = null;
    this.manager.abort(new ClientClosedError("the client was closed", { reason: "CLIENT_CLOSED" }));
  }
}

