// The SDK's HTTP/2 client against a plain node:http2 server. The first test is the shape of
// nodejs/node#65677 (headers, body and trailers in one write; the stream closed before the
// body is read), which connect-node's client reports as `Premature close` on Node 24.20+
// and 26.3+; the others pin how a stream's end, reset or lost connection is reported.
import assert from "node:assert/strict";
import http2 from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalClientResponse } from "@connectrpc/connect/protocol";
import { Http2SessionManager } from "@connectrpc/connect-node";
import { createHttp2Client } from "../src/transport/http2-client.js";

// `session.socket` is a proxy that refuses destroy() and end(); the raw socket of the newest
// connection is kept instead (each test opens one connection).
type Handler = (stream: http2.ServerHttp2Stream, session: http2.ServerHttp2Session, socket: Socket) => void;

const BIG = 6 * 1024 * 1024;

const HANDLERS: Readonly<Record<string, Handler>> = {
  // Everything in one go once the request ended: the regression's shape.
  "all at once": (stream) => {
    stream.on("end", () => {
      stream.respond({ ":status": 200 }, { waitForTrailers: true });
      stream.once("wantTrailers", () => { stream.sendTrailers({ "grpc-status": "0" }); });
      stream.end("complete response");
    });
  },
  "trailers only": (stream) => {
    stream.on("end", () => { stream.respond({ ":status": 200, "grpc-status": "14" }, { endStream: true }); });
  },
  "big body": (stream) => {
    stream.respond({ ":status": 200 }, { waitForTrailers: true });
    stream.once("wantTrailers", () => { stream.sendTrailers({ "grpc-status": "0" }); });
    stream.end(Buffer.alloc(BIG, 7));
  },
  "endless body": (stream) => {
    stream.respond({ ":status": 200 });
    const timer = setInterval(() => stream.write("more"), 5);
    stream.on("close", () => { clearInterval(timer); });
  },
  "socket destroyed before the response": (_stream, _session, socket) => {
    socket.destroy();
  },
  "socket destroyed mid-body": (stream, _session, socket) => {
    stream.respond({ ":status": 200 });
    stream.write("part", () => setTimeout(() => socket.destroy(), 10));
  },
  "socket reset mid-body": (stream, _session, socket) => {
    stream.respond({ ":status": 200 });
    stream.write("part", () => setTimeout(() => socket.resetAndDestroy(), 10));
  },
  "socket ended mid-body": (stream, _session, socket) => {
    stream.respond({ ":status": 200 });
    stream.write("part", () => setTimeout(() => socket.end(), 10));
  },
  "session destroyed mid-body": (stream, session) => {
    stream.respond({ ":status": 200 });
    stream.write("part", () => setTimeout(() => { session.destroy(); }, 10));
  },
  "reset with INTERNAL_ERROR": (stream) => {
    stream.respond({ ":status": 200 });
    stream.write("part", () => { stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR); });
  },
  "reset with REFUSED_STREAM": (stream) => { stream.close(http2.constants.NGHTTP2_REFUSED_STREAM); },
  "reset with CANCEL": (stream) => {
    stream.respond({ ":status": 200 });
    stream.write("part", () => { stream.close(http2.constants.NGHTTP2_CANCEL); });
  },
};

let server: http2.Http2Server;
let url = "";
let newestSocket: Socket | null = null;
const closedCodes: number[] = [];

before(async () => {
  server = http2.createServer();
  server.on("session", (session) => session.on("error", () => undefined));
  server.on("connection", (socket: Socket) => {
    newestSocket = socket;
  });
  server.on("stream", (stream, headers) => {
    stream.on("error", () => undefined);
    stream.on("close", () => closedCodes.push(stream.rstCode));
    stream.resume();
    const handler = HANDLERS[String(headers["x-scenario"])];
    if (handler === undefined) throw new Error(`no scenario ${String(headers["x-scenario"])}`);
    if (newestSocket === null) throw new Error("no connection yet");
    handler(stream, stream.session as http2.ServerHttp2Session, newestSocket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  await new Promise((resolve) => server.close(resolve));
});

// eslint-disable-next-line @typescript-eslint/require-await
async function* requestBody(): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode("request");
}

/** A request still being written when the worker answers (Node ends a stream whose both sides ended before a reset). */
async function* requestHeldOpen(): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode("request");
  await delay(300);
}

async function call(scenario: string, manager: Http2SessionManager, signal?: AbortSignal, body = requestBody()): Promise<UniversalClientResponse> {
  return createHttp2Client(manager)({
    url: `${url}/colossus.api.v1alpha1.RunService/GetRun`,
    method: "POST",
    header: new Headers({ "x-scenario": scenario, "content-type": "application/grpc" }),
    body,
    ...(signal === undefined ? {} : { signal }),
  });
}

async function readAll(response: UniversalClientResponse): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function failureOf(work: Promise<unknown>): Promise<ConnectError> {
  try {
    await work;
  } catch (error) {
    assert.ok(error instanceof ConnectError, `not a ConnectError: ${String(error)}`);
    return error;
  }
  assert.fail("the call did not fail");
}

async function withManager<T>(work: (manager: Http2SessionManager) => Promise<T>): Promise<T> {
  const manager = new Http2SessionManager(url);
  try {
    return await work(manager);
  } finally {
    manager.abort();
  }
}

describe("the SDK's HTTP/2 client", () => {
  it("reads headers, body and trailers that arrived together, after the stream closed (nodejs/node#65677)", async () => {
    await withManager(async (manager) => {
      for (let round = 0; round < 20; round += 1) {
        const response = await call("all at once", manager);
        // Let the whole response arrive and the stream close before anything is read.
        await delay(round % 2 === 0 ? 20 : 1);
        assert.equal(response.status, 200);
        assert.equal((await readAll(response)).toString(), "complete response");
        assert.equal(response.trailer.get("grpc-status"), "0");
      }
    });
  });

  it("reads a trailers-only answer", async () => {
    await withManager(async (manager) => {
      const response = await call("trailers only", manager);
      await delay(20);
      assert.equal(response.header.get("grpc-status"), "14");
      assert.equal((await readAll(response)).length, 0);
    });
  });

  it("reads a body larger than its buffer, slowly, without losing a byte", async () => {
    await withManager(async (manager) => {
      const response = await call("big body", manager);
      let total = 0;
      for await (const chunk of response.body) {
        total += chunk.length;
        if (total % 7 === 0) await delay(1);
        assert.ok(chunk.every((byte) => byte === 7));
      }
      assert.equal(total, BIG);
      assert.equal(response.trailer.get("grpc-status"), "0");
    });
  });

  it("cancels the stream when the reader stops early", async () => {
    await withManager(async (manager) => {
      const response = await call("endless body", manager);
      const before = closedCodes.length;
      for await (const chunk of response.body) {
        assert.ok(chunk.length > 0);
        break;
      }
      for (let i = 0; i < 100 && closedCodes.length === before; i += 1) await delay(5);
      assert.equal(closedCodes.at(-1), http2.constants.NGHTTP2_CANCEL);
    });
  });

  it("reports the caller's abort as CANCELED and resets the stream", async () => {
    await withManager(async (manager) => {
      const controller = new AbortController();
      const response = await call("endless body", manager, controller.signal);
      const reading = readAll(response);
      await delay(20);
      controller.abort();
      assert.equal((await failureOf(reading)).code, Code.Canceled);
    });
  });

  for (const scenario of ["socket destroyed mid-body", "socket reset mid-body", "socket ended mid-body", "session destroyed mid-body"]) {
    it(`reports a connection lost under the body as UNAVAILABLE: ${scenario}`, async () => {
      await withManager(async (manager) => {
        const response = await call(scenario, manager);
        const failure = await failureOf(readAll(response));
        assert.equal(failure.code, Code.Unavailable, failure.message);
        assert.match(failure.rawMessage, /connection to the worker was lost/);
      });
    });
  }

  it("reports a connection lost before the response as UNAVAILABLE", async () => {
    await withManager(async (manager) => {
      const failure = await failureOf(call("socket destroyed before the response", manager).then(readAll));
      assert.equal(failure.code, Code.Unavailable, failure.message);
    });
  });

  it("reports a connection that cannot open as UNAVAILABLE, with the refusal as its cause", async () => {
    const closed = http2.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const manager = new Http2SessionManager(`http://127.0.0.1:${port}`);
    try {
      const failure = await failureOf(
        createHttp2Client(manager)({ url: `http://127.0.0.1:${port}/x/Y`, method: "POST", header: new Headers(), body: requestBody() }),
      );
      assert.equal(failure.code, Code.Unavailable);
      let cause: unknown = failure.cause;
      while (cause instanceof Error && (cause as { code?: unknown }).code !== "ECONNREFUSED") cause = cause.cause;
      assert.equal((cause as { code?: unknown } | undefined)?.code, "ECONNREFUSED");
    } finally {
      manager.abort();
    }
  });

  for (const [scenario, code] of [
    ["reset with INTERNAL_ERROR", Code.Internal],
    ["reset with REFUSED_STREAM", Code.Unavailable],
    ["reset with CANCEL", Code.Canceled],
  ] as const) {
    it(`keeps gRPC's mapping of a stream the worker reset: ${scenario}`, async () => {
      await withManager(async (manager) => {
        const failure = await failureOf(call(scenario, manager, undefined, requestHeldOpen()).then(readAll));
        assert.equal(failure.code, code, failure.message);
      });
    });
  }
});
