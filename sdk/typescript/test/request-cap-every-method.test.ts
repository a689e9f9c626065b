// C7 is enforced on the channel, not per call site: every RPC of the contract that the SDK
// can send goes through a transport that refuses a request message over the advertised
// cap before the call opens. The methods are read from the generated service descriptors,
// so a method added to the contract later is covered (or fails here) without anyone
// remembering to add it.
import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { create, toBinary, type DescMessage, type DescMethod, type DescService, type MessageShape } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import type { ConnectRouter, StreamRequest, StreamResponse, UnaryRequest, UnaryResponse } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { openConnection, type Connection } from "../src/connection.js";
import { ResourceExhaustedError } from "../src/errors.js";
import { RunService } from "../src/gen/colossus/api/v1alpha1/run_service_pb.js";
import { SystemService } from "../src/gen/colossus/api/v1alpha1/system_pb.js";
import { resolveClientOptions } from "../src/options.js";
import { Bearer } from "../src/transport/bearer.js";
import { parseLeafCertificate, sha256Hex } from "../src/transport/certificate.js";
import { discover } from "../src/transport/descriptor.js";
import { requestCapInterceptor } from "../src/transport/request-cap.js";
import { BEARER, INSTANCE_ID, daemonServerInfo, fixture, writeDiscovery } from "./helpers/fake-worker.js";

const CAP = 256;

/** Methods the SDK sends only while connecting, before any cap is known. */
const SENT_BEFORE_THE_CAP = new Set(["colossus.api.v1alpha1.SystemService.GetServerInfo"]);

/** Every service of every generated `*_pb.js` module next to this build. */
async function contractServices(): Promise<DescService[]> {
  const root = fileURLToPath(new URL("../src/gen/", import.meta.url));
  const files = (await fs.readdir(root, { recursive: true })).filter((name) => name.endsWith("_pb.js"));
  assert.ok(files.length > 0, `no generated modules under ${root}`);
  const services = new Map<string, DescService>();
  for (const file of files) {
    const module = (await import(path.join(root, file))) as Record<string, unknown>;
    for (const value of Object.values(module)) {
      const candidate = value as Partial<DescService> | null;
      if (typeof candidate === "object" && candidate?.kind === "service" && candidate.typeName !== undefined) services.set(candidate.typeName, candidate as DescService);
    }
  }
  return [...services.values()];
}

/** A message of `method`'s request type whose encoding is exactly `size` bytes (an unknown field carries the padding). */
function requestOfSize(method: DescMethod, size: number): MessageShape<DescMessage> {
  for (let data = size; data >= 0; data -= 1) {
    const padded = create(method.input);
    padded.$unknown = [{ no: 1000, wireType: WireType.LengthDelimited, data: lengthDelimited(data) }];
    if (toBinary(method.input, padded).length === size) return padded;
  }
  throw new Error(`cannot build a ${method.input.typeName} of ${size} bytes`);
}

/** The value bytes of a length-delimited field: its length varint, then `size` bytes. */
function lengthDelimited(size: number): Uint8Array {
  const prefix: number[] = [];
  let rest = size;
  while (rest >= 0x80) {
    prefix.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  prefix.push(rest);
  const bytes = new Uint8Array(prefix.length + size);
  bytes.set(prefix);
  return bytes;
}

type AnyClient = Record<string, (...args: unknown[]) => unknown>;

/** The SDK's own client for `service`: the connection property that has each of its methods. */
function sdkClient(connection: Connection, service: DescService): AnyClient | null {
  for (const value of Object.values(connection)) {
    if (typeof value !== "object" || value === null) continue;
    const client = value as AnyClient;
    if (service.methods.every((method) => typeof client[method.localName] === "function")) return client;
  }
  return null;
}

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  for (;;) if ((await iterator.next()).done === true) return;
}

/** Sends `message` with `method` through `client`, the way its kind is called. */
async function send(client: AnyClient, method: DescMethod, message: MessageShape<DescMessage>): Promise<void> {
  const call = client[method.localName];
  assert.ok(call !== undefined);
  const options = { timeoutMs: 5000 };
  // eslint-disable-next-line @typescript-eslint/require-await -- connect takes client streams as AsyncIterables
  const one = async function* (): AsyncGenerator<MessageShape<DescMessage>> {
    yield message;
  };
  switch (method.methodKind) {
    case "unary":
      await call.call(client, message, options);
      return;
    case "server_streaming":
      await drain(call.call(client, message, options) as AsyncIterable<unknown>);
      return;
    case "client_streaming":
      await call.call(client, one(), options);
      return;
    case "bidi_streaming":
      await drain(call.call(client, one(), options) as AsyncIterable<unknown>);
      return;
  }
}

interface CountingWorker {
  readonly dir: string;
  readonly pin: string;
  /** The path of every request that reached the worker. */
  readonly paths: string[];
  close(): Promise<void>;
}

/** Answers GetServerInfo with the cap and records every request path; nothing else is served. */
async function startCountingWorker(cap: number): Promise<CountingWorker> {
  const cert = fixture("leaf.pem");
  const routes = (router: ConnectRouter): void => {
    router.service(SystemService, {
      getServerInfo: () => ({ serverInfo: daemonServerInfo({ maxRequestBytes: BigInt(cap) }) }),
    });
  };
  const adapter = connectNodeAdapter({ routes });
  const paths: string[] = [];
  const server = http2.createSecureServer({ cert, key: fixture("leaf.key"), minVersion: "TLSv1.3", allowHTTP1: false }, (request, response) => {
    paths.push(request.url);
    adapter(request, response);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "colossus-ts-cap-"));
  const pin = sha256Hex(parseLeafCertificate(Buffer.from(cert)).der);
  await writeDiscovery(dir, (server.address() as AddressInfo).port, pin, cert);
  return {
    dir,
    pin,
    paths,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        for (const session of sessions) session.destroy();
      });
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

const isTooLarge = (e: unknown): boolean => e instanceof ResourceExhaustedError && e.reason === "REQUEST_TOO_LARGE" && e.code === null;

describe("every RPC the SDK can send is held to the advertised request cap", () => {
  let worker: CountingWorker;
  let connection: Connection;
  let services: DescService[];

  before(async () => {
    worker = await startCountingWorker(CAP);
    const found = await discover(worker.dir, INSTANCE_ID, worker.pin);
    connection = await openConnection(
      { endpoint: found.descriptor.endpoint, certificate: found.certificate, expectedInstanceId: INSTANCE_ID, expectedPin: worker.pin, expectedMode: "SHARED_DAEMON" },
      new Bearer(BEARER),
      resolveClientOptions({ retry: { maxAttempts: 1 } }),
    );
    services = await contractServices();
  });

  after(async () => {
    connection.close();
    await worker.close();
  });

  it("finds the contract's services", () => {
    const names = services.map((s) => s.typeName);
    for (const known of [RunService.typeName, SystemService.typeName, "colossus.api.v1alpha1.ArtifactService"]) assert.ok(names.includes(known), known);
  });

  it("refuses a request one byte over the cap before the call opens, for each method", async () => {
    const checked: string[] = [];
    for (const service of services) {
      const client = sdkClient(connection, service);
      for (const method of service.methods) {
        const name = `${service.typeName}.${method.name}`;
        if (SENT_BEFORE_THE_CAP.has(name)) continue;
        assert.ok(client !== null, `${name}: the SDK has no client for ${service.typeName}; give it one on a channel transport (or list the method above)`);
        const before = worker.paths.length;
        await assert.rejects(
          send(client, method, requestOfSize(method, CAP + 1)),
          (e: unknown) => isTooLarge(connection.mapError(e)),
          name,
        );
        // A small call of the same method on the same connection, answered after the worker
        // saw any earlier stream: only it may have arrived.
        await send(client, method, requestOfSize(method, 8)).catch(() => undefined);
        assert.deepEqual(worker.paths.slice(before), [`/${service.typeName}/${method.name}`], `${name}: the oversized call reached the worker`);
        checked.push(name);
      }
    }
    // The run and artifact services at least: an empty walk would prove nothing.
    assert.ok(checked.length >= 8, checked.join(", "));
  });

  it("sends a request of exactly the cap, for each method", async () => {
    for (const service of services) {
      const client = sdkClient(connection, service);
      if (client === null) continue;
      for (const method of service.methods) {
        const name = `${service.typeName}.${method.name}`;
        if (SENT_BEFORE_THE_CAP.has(name)) continue;
        const before = worker.paths.length;
        // This worker serves none of these methods: what matters is that the call arrived.
        await send(client, method, requestOfSize(method, CAP)).catch((e: unknown) => {
          assert.ok(!isTooLarge(connection.mapError(e)), `${name} was refused at the cap`);
        });
        assert.equal(worker.paths.length, before + 1, `${name} did not reach the worker`);
        assert.equal(worker.paths.at(-1), `/${service.typeName}/${method.name}`);
      }
    }
  });
});

describe("the request cap interceptor", () => {
  const upload = (async () => {
    const services = await contractServices();
    const method = services.flatMap((s) => s.methods).find((m) => m.methodKind === "client_streaming");
    assert.ok(method !== undefined, "the contract has a client-streaming method");
    return method;
  })();

  function streamRequest(method: DescMethod, messages: AsyncIterable<MessageShape<DescMessage>>): StreamRequest {
    return { stream: true, message: messages, method: method as StreamRequest["method"] } as unknown as StreamRequest;
  }

  async function* source(items: MessageShape<DescMessage>[], released: { value: boolean }): AsyncGenerator<MessageShape<DescMessage>> {
    try {
      for (const item of items) yield await Promise.resolve(item);
    } finally {
      released.value = true;
    }
  }

  it("checks each later message of a stream as it is sent, and releases the caller's source", async () => {
    const method = await upload;
    const released = { value: false };
    const sent: number[] = [];
    const next = async (request: UnaryRequest | StreamRequest): Promise<UnaryResponse | StreamResponse> => {
      assert.ok(request.stream);
      for await (const message of request.message) sent.push(toBinary(method.input, message).length);
      return {} as StreamResponse;
    };
    const intercept = requestCapInterceptor(() => CAP)(next);
    const messages = [requestOfSize(method, CAP), requestOfSize(method, 10), requestOfSize(method, CAP + 1), requestOfSize(method, 10)];
    await assert.rejects(intercept(streamRequest(method, source(messages, released))), isTooLarge);
    assert.deepEqual(sent, [CAP, 10], "the messages before the oversized one were sent, nothing after it");
    assert.ok(released.value, "the caller's message source was closed");
  });

  it("refuses an oversized first message without opening the call", async () => {
    const method = await upload;
    const released = { value: false };
    let opened = false;
    const next = (): Promise<StreamResponse> => {
      opened = true;
      return Promise.resolve({} as StreamResponse);
    };
    await assert.rejects(requestCapInterceptor(() => CAP)(next)(streamRequest(method, source([requestOfSize(method, CAP + 1)], released))), isTooLarge);
    assert.equal(opened, false);
    assert.ok(released.value, "the caller's message source was closed");
  });

  it("reads the cap at each call: none before GetServerInfo, then the advertised one", async () => {
    const method = RunService.methods.find((m) => m.methodKind === "unary");
    assert.ok(method !== undefined);
    let cap = 0;
    let calls = 0;
    const intercept = requestCapInterceptor(() => cap)(() => {
      calls += 1;
      return Promise.resolve({} as UnaryResponse);
    });
    const request = { stream: false, message: requestOfSize(method, CAP + 1), method } as unknown as UnaryRequest;
    await intercept(request);
    cap = CAP;
    await assert.rejects(intercept(request), isTooLarge);
    assert.equal(calls, 1);
  });
});
