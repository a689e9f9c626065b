/**
 * The HTTP/2 client under every call: connect's `UniversalClientFn` over the channel's
 * session manager, reading each response through the stream's own events.
 *
 * Why not connect-node's client: it reads a response body by iterating the Node stream
 * (`for await`), and Node 24.20+ and 26.3+ (nodejs/node#65677) report `Premature close` when
 * a stream whose headers, body and trailers arrived together is iterated after it closed,
 * which is how a small unary answer usually arrives. Here the `data`, `trailers`, `end`,
 * `error` and `close` listeners are on the stream from the moment it exists, so nothing is
 * ever read from a closed stream.
 *
 * Failures of the socket or the session under a call (reset, ended by the worker, GOAWAY,
 * a connection lost before the response ended) are transport failures: `UNAVAILABLE` with
 * the Node error as the cause, as Python, Go and Rust report them, so reads and watches
 * retry and a mutation becomes outcome-unknown. A stream the worker itself reset keeps the
 * gRPC mapping of its HTTP/2 code.
 */
import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { getAbortSignalReason, type UniversalClientFn, type UniversalClientRequest, type UniversalClientResponse } from "@connectrpc/connect/protocol";
import type { Http2SessionManager } from "@connectrpc/connect-node";

const {
  NGHTTP2_NO_ERROR,
  NGHTTP2_CANCEL,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_ENHANCE_YOUR_CALM,
  NGHTTP2_INADEQUATE_SECURITY,
  NGHTTP2_HTTP_1_1_REQUIRED,
} = http2.constants;

/** Unread response bytes above which the stream is paused (HTTP/2 flow control then holds the worker). */
const PAUSE_ABOVE_BYTES = 1 << 20;

/** An HTTP/2 client whose every request goes through `manager`. */
export function createHttp2Client(manager: Http2SessionManager): UniversalClientFn {
  return (request) => new Http2Call(manager, request).response;
}

/**
 * A Node error of the socket or the session, or a stream that ended without its response:
 * the worker went away under the call.
 */
export function lostConnection(cause: unknown, what = "the connection to the worker was lost"): ConnectError {
  const detail = cause instanceof Error ? `: ${cause.message}` : "";
  return new ConnectError(`${what}${detail}`, Code.Unavailable, undefined, undefined, cause);
}

/** gRPC's mapping of an RST_STREAM code the worker sent (PROTOCOL-HTTP2.md, "Errors"). */
function resetByWorker(rstCode: number): ConnectError {
  const text = `the worker reset the stream with HTTP/2 code ${rstCode}`;
  switch (rstCode) {
    case NGHTTP2_REFUSED_STREAM:
      return new ConnectError(text, Code.Unavailable);
    case NGHTTP2_CANCEL:
      return new ConnectError(text, Code.Canceled);
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return new ConnectError(text, Code.ResourceExhausted);
    case NGHTTP2_INADEQUATE_SECURITY:
    case NGHTTP2_HTTP_1_1_REQUIRED:
      return new ConnectError(text, Code.PermissionDenied);
    default:
      return new ConnectError(text, Code.Internal);
  }
}

/** One request and its response, as events arrive. */
class Http2Call {
  readonly response: Promise<UniversalClientResponse>;
  private resolveResponse!: (response: UniversalClientResponse) => void;
  private rejectResponse!: (error: ConnectError) => void;
  private stream: http2.ClientHttp2Stream | null = null;
  private session: http2.Http2Session | null = null;
  private responded = false;
  private readonly body = new ResponseBody(() => { this.cancel(); });
  private readonly trailer = new Headers();
  private failure: ConnectError | null = null;
  private cancelledByUs = false;
  private trailerReceived = false;
  private endedWithoutStatus = false;

  constructor(
    private readonly manager: Http2SessionManager,
    private readonly request: UniversalClientRequest,
  ) {
    this.response = new Promise((resolve, reject) => {
      this.resolveResponse = resolve;
      this.rejectResponse = reject;
    });
    const signal = request.signal;
    if (signal?.aborted === true) {
      this.fail(ConnectError.from(getAbortSignalReason(signal), Code.Canceled));
      return;
    }
    const onAbort = (): void => {
      this.fail(ConnectError.from(signal === undefined ? undefined : getAbortSignalReason(signal), Code.Canceled));
      this.cancel();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    void this.start().finally(() => signal?.removeEventListener("abort", onAbort));
  }

  private async start(): Promise<void> {
    const url = new URL(this.request.url);
    let stream: http2.ClientHttp2Stream;
    try {
      stream = await this.manager.request(this.request.method, url.pathname + url.search, toNodeHeaders(this.request.header), {});
    } catch (error) {
      // The session manager's own errors (a session destroyed, closed or still connecting
      // when the request came) are states of the connection, not of the call.
      this.fail(error instanceof ConnectError && error.code !== Code.Internal ? error : lostConnection(error));
      return;
    }
    this.stream = stream;
    this.session = stream.session ?? null;
    if (this.failure !== null) {
      this.cancel();
      return;
    }
    this.listen(stream);
    await new Promise<void>((settled) => {
      stream.once("close", settled);
      void this.send(stream);
    });
  }

  private listen(stream: http2.ClientHttp2Stream): void {
    stream.on("response", (headers) => {
      this.responded = true;
      this.resolveResponse({
        status: headers[":status"] ?? 0,
        header: toWebHeaders(headers),
        body: this.body,
        trailer: this.trailer,
      });
    });
    stream.on("data", (chunk: Buffer) => {
      this.manager.notifyResponseByteRead(stream);
      if (this.body.push(chunk) > PAUSE_ABOVE_BYTES) {
        stream.pause();
        this.body.onDrained(() => stream.resume());
      }
    });
    stream.on("trailers", (headers: http2.IncomingHttpHeaders) => {
      this.trailerReceived = true;
      toWebHeaders(headers).forEach((value, key) => { this.trailer.set(key, value); });
    });
    stream.on("end", () => {
      // A gRPC response ends with trailers, or with headers that end the stream. Node also
      // ends a stream whose connection closed under it: that is a lost connection, not an
      // answer without a status.
      // The same happens when the worker resets the stream. Without a status, the stream's
      // close (its reset code, the connection's state) decides.
      if (stream.endAfterHeaders || this.trailerReceived) this.body.end();
      else this.endedWithoutStatus = true;
    });
    stream.on("error", (error: Error & { code?: unknown }) => {
      // The worker answered and ended the stream while the request was still being
      // written: the answer decides, not the refused write.
      if (error.code === "ERR_STREAM_WRITE_AFTER_END" && stream.writableEnded) return;
      this.fail(this.streamFailure(stream, error));
    });
    stream.on("close", () => {
      if (this.body.ended) return;
      // A body the worker ended without trailers on a live connection: gRPC's own check
      // then reports the missing status.
      if (this.endedWithoutStatus && stream.rstCode === NGHTTP2_NO_ERROR && !this.connectionGone()) this.body.end();
      else this.fail(this.streamFailure(stream, undefined));
    });
  }

  /** Why a stream failed: the worker's reset keeps its code; anything else lost the connection. */
  private streamFailure(stream: http2.ClientHttp2Stream, error: (Error & { code?: unknown }) | undefined): ConnectError {
    if (error instanceof ConnectError) return error;
    const rstCode = stream.rstCode;
    const sessionGone = this.connectionGone();
    const resetByPeer = error === undefined ? rstCode !== NGHTTP2_NO_ERROR : error.code === "ERR_HTTP2_STREAM_ERROR";
    if (resetByPeer && !sessionGone && !this.cancelledByUs) return resetByWorker(rstCode);
    if (error !== undefined) return lostConnection(error);
    return lostConnection(undefined, this.responded ? "the connection to the worker was lost before the response ended" : "the connection to the worker was lost before a response");
  }

  private connectionGone(): boolean {
    const session = this.session;
    // Node's typings say a session always has its socket; a destroyed one has none.
    const socket = session?.socket as { readonly destroyed: boolean } | undefined;
    return session === null || session.destroyed || session.closed || socket === undefined || socket.destroyed;
  }

  /** Writes the request body with backpressure, then ends the stream. */
  private async send(stream: http2.ClientHttp2Stream): Promise<void> {
    const body = this.request.body;
    try {
      if (body !== undefined) {
        for await (const chunk of body) {
          if (this.failure !== null || stream.destroyed) return;
          await new Promise<void>((written, refused) => {
            stream.write(chunk, (error) => {
              if (error === null || error === undefined) written();
              else refused(error);
            });
          });
        }
      }
      if (!stream.destroyed) stream.end();
    } catch (error) {
      // A write the closed stream refused is reported by the stream's own events; a failure
      // of the request body itself (a serialization cap) ends the call with that failure.
      if (!stream.destroyed && !stream.writableEnded) {
        this.fail(ConnectError.from(error, Code.Internal));
        this.cancel();
      }
    }
  }

  private fail(error: ConnectError): void {
    if (this.failure !== null) return;
    this.failure = error;
    if (!this.responded) this.rejectResponse(error);
    this.body.fail(error);
  }

  /** Ends the stream from our side (an abort, or the reader stopped early). */
  private cancel(): void {
    const stream = this.stream;
    if (stream === null || stream.closed || stream.destroyed) return;
    this.cancelledByUs = true;
    stream.close(NGHTTP2_CANCEL);
    // Node keeps a stream closed with unread data until it is read; nobody will read it.
    stream.destroy();
  }
}

/** The response body: chunks queued by the stream's events, read as an async iterable. */
class ResponseBody implements AsyncIterable<Uint8Array> {
  private readonly chunks: Uint8Array[] = [];
  private bytes = 0;
  private done = false;
  private failure: ConnectError | null = null;
  private wake: (() => void) | null = null;
  private drained: (() => void) | null = null;
  private iterated = false;

  constructor(private readonly stopReading: () => void) {}

  get ended(): boolean {
    return this.done;
  }

  /** Queues a chunk; returns the bytes now unread. */
  push(chunk: Uint8Array): number {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    this.signal();
    return this.bytes;
  }

  onDrained(resume: () => void): void {
    this.drained = resume;
  }

  end(): void {
    this.done = true;
    this.signal();
  }

  fail(error: ConnectError): void {
    if (this.done) return;
    this.failure = error;
    this.signal();
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private stop(): void {
    if (!this.done) this.stopReading();
    this.chunks.length = 0;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.iterated) throw new ConnectError("a response body can be read once", Code.Internal);
    this.iterated = true;
    return {
      next: async (): Promise<IteratorResult<Uint8Array>> => {
        for (;;) {
          const chunk = this.chunks.shift();
          if (chunk !== undefined) {
            this.bytes -= chunk.length;
            if (this.drained !== null && this.bytes <= PAUSE_ABOVE_BYTES / 2) {
              const resume = this.drained;
              this.drained = null;
              resume();
            }
            return { done: false, value: chunk };
          }
          if (this.failure !== null) throw this.failure;
          if (this.done) return { done: true, value: undefined };
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
        }
      },
      return: (): Promise<IteratorResult<Uint8Array>> => {
        this.stop();
        return Promise.resolve({ done: true, value: undefined });
      },
      // connect's pipelines end a body they gave up on through throw().
      throw: (error: unknown): Promise<IteratorResult<Uint8Array>> => {
        this.stop();
        return Promise.reject(error instanceof Error ? error : new ConnectError(String(error), Code.Internal));
      },
    };
  }
}

function toWebHeaders(headers: http2.IncomingHttpHeaders): Headers {
  const web = new Headers();
  for (const [key, value] of Object.entries(headers)) {
    if (key.startsWith(":") || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) web.append(key, one);
  }
  return web;
}

function toNodeHeaders(init: HeadersInit): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = Object.create(null) as http2.OutgoingHttpHeaders;
  new Headers(init).forEach((value, key) => {
    out[key] = value;
  });
  return out;
}
