// C1-C5 on every connection: the live handshake, reconnects included, and bearer hygiene.
import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import path from "node:path";
import tls from "node:tls";
import { after, describe, it } from "node:test";
import { inspect } from "node:util";
import {
  CertificateError,
  Client,
  ColossusError,
  CredentialError,
  DescriptorError,
  InMemoryCredentialProvider,
  PinMismatchError,
  TlsPolicyError,
  TrustError,
  type CredentialProvider,
} from "../src/index.js";
import { BEARER, INSTANCE_ID, fixture, startFakeWorker, writeDiscovery, type FakeWorker } from "./helpers/fake-worker.js";

class CountingProvider implements CredentialProvider {
  calls = 0;
  constructor(private readonly value = BEARER) {}
  getBearer(): string {
    this.calls += 1;
    return this.value;
  }
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function genuine(): Promise<FakeWorker> {
  const worker = await startFakeWorker();
  cleanups.push(() => worker.close());
  return worker;
}

/** A TLS server on `port` that records whether any application byte arrived. */
async function hostileTls(options: tls.TlsOptions, port = 0): Promise<{ port: number; handshakes: () => number; bytes: () => number; close: () => Promise<void> }> {
  let handshakes = 0;
  let bytes = 0;
  const server = tls.createServer(options, (socket) => {
    handshakes += 1;
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    socket.on("error", () => undefined);
  });
  server.on("tlsClientError", () => undefined);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    handshakes: () => handshakes,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => server.close(() => { resolve(); })),
  };
}

async function connectTo(worker: { dir: string; pin: string }, provider: CredentialProvider = new CountingProvider()): Promise<Client> {
  return Client.connect({
    publicApiDir: worker.dir,
    expectedInstanceId: INSTANCE_ID,
    expectedCertificateSha256: worker.pin,
    credentials: provider,
    connectTimeoutMs: 3_000,
    retry: { maxAttempts: 2, initialBackoffMs: 1, maxBackoffMs: 5, maxElapsedMs: 1_000 },
  });
}

describe("the live handshake (C4) and the bearer (C5)", () => {
  it("connects to the genuine worker and loads the bearer once", async () => {
    const worker = await genuine();
    const provider = new CountingProvider();
    const client = await connectTo(worker, provider);
    cleanups.push(() => client.close());
    assert.equal(client.serverInfo.instanceId, INSTANCE_ID);
    assert.equal(provider.calls, 1);
  });

  it("refuses a server that sends an extra certificate after the pinned leaf, before loading the bearer", async () => {
    const worker = await startFakeWorker({ chain: fixture("leaf.pem") + fixture("ca.pem") });
    cleanups.push(() => worker.close());
    const provider = new CountingProvider();
    await assert.rejects(connectTo(worker, provider), (e: unknown) => e instanceof TlsPolicyError && e.reason === "TLS_CHAIN");
    assert.equal(provider.calls, 0);
    assert.deepEqual(worker.authorizations, []);
  });

  it("refuses a foreign leaf", async () => {
    const worker = await genuine();
    const hostile = await hostileTls({ cert: fixture("foreign.pem"), key: fixture("foreign.key"), minVersion: "TLSv1.3" });
    cleanups.push(hostile.close);
    const dir = path.join(worker.dir, "foreign");
    await writeDiscovery(dir, hostile.port, worker.pin, fixture("leaf.pem"));
    const provider = new CountingProvider();
    await assert.rejects(connectTo({ dir, pin: worker.pin }, provider), PinMismatchError);
    assert.equal(provider.calls, 0);
    assert.equal(hostile.bytes(), 0);
  });

  it("refuses a TLS 1.2-only server", async () => {
    const worker = await genuine();
    const hostile = await hostileTls({ cert: fixture("leaf.pem"), key: fixture("leaf.key"), minVersion: "TLSv1.2", maxVersion: "TLSv1.2" });
    cleanups.push(hostile.close);
    const dir = path.join(worker.dir, "tls12");
    await writeDiscovery(dir, hostile.port, worker.pin, fixture("leaf.pem"));
    const provider = new CountingProvider();
    await assert.rejects(connectTo({ dir, pin: worker.pin }, provider), (e: unknown) => e instanceof TlsPolicyError && e.reason === "TLS_VERSION");
    assert.equal(provider.calls, 0);
    assert.equal(hostile.handshakes(), 0);
  });

  for (const [name, options] of [
    ["a TLS 1.2 listener", { cert: fixture("leaf.pem"), key: fixture("leaf.key"), minVersion: "TLSv1.2", maxVersion: "TLSv1.2" }],
    ["a wrong-leaf listener", { cert: fixture("foreign.pem"), key: fixture("foreign.key"), minVersion: "TLSv1.3" }],
    ["a listener sending an extra certificate", { cert: fixture("leaf.pem") + fixture("ca.pem"), key: fixture("leaf.key"), minVersion: "TLSv1.3" }],
  ] as const) {
    it(`a reconnect that meets ${name} fails without sending the bearer`, async () => {
      const worker = await startFakeWorker();
      const client = await connectTo(worker);
      cleanups.push(() => client.close());
      await client.runs.get("run_1");
      const port = worker.port;
      await worker.close();
      const hostile = await hostileTls(options, port);
      cleanups.push(hostile.close);
      await assert.rejects(client.runs.get("run_1"), TrustError);
      assert.equal(hostile.bytes(), 0, "no application byte (so no bearer) reached the listener");
    });
  }

  it("a broken descriptor is refused before the provider is asked", async () => {
    const worker = await genuine();
    await fs.writeFile(path.join(worker.dir, "endpoint.json"), '{"endpoint": "https://localhost:1"}', { mode: 0o600 });
    const provider = new CountingProvider();
    await assert.rejects(connectTo(worker, provider), DescriptorError);
    assert.equal(provider.calls, 0);
  });

  it("a FIFO in place of the descriptor is refused without blocking", async () => {
    const worker = await genuine();
    const file = path.join(worker.dir, "endpoint.json");
    await fs.rm(file);
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", ["-m", "600", file]);
    await assert.rejects(connectTo(worker), (e: unknown) => e instanceof DescriptorError && /not a regular file/.test(e.message));
  });

  it("a directory in place of either discovery file is a typed refusal", async () => {
    for (const [name, type] of [["endpoint.json", DescriptorError], ["certificate.pem", CertificateError]] as const) {
      const worker = await genuine();
      const file = path.join(worker.dir, name);
      await fs.rm(file);
      await fs.mkdir(file, { mode: 0o700 });
      const provider = new CountingProvider();
      await assert.rejects(connectTo(worker, provider), (e: unknown) => e instanceof type && /not a regular file/.test(e.message), name);
      assert.equal(provider.calls, 0);
    }
  });

  it("a malformed bearer is refused locally without echoing it", async () => {
    const worker = await genuine();
    const secret = "bad bearer with spaces but long enough to pass length";
    await assert.rejects(connectTo(worker, new CountingProvider(secret)), (e: unknown) => e instanceof CredentialError && !String(e).includes(secret) && !inspect(e).includes(secret));
    assert.deepEqual(worker.authorizations, []);
  });

  it("never shows the bearer in inspect, JSON or error output", async () => {
    const worker = await genuine();
    const provider = new InMemoryCredentialProvider(BEARER);
    const client = await connectTo(worker, provider);
    cleanups.push(() => client.close());
    const outputs = [inspect(client, { depth: 10, showHidden: true }), JSON.stringify(client), inspect(provider, { showHidden: true }), JSON.stringify(provider), String(provider)];
    const failure = await client.runs.get("not a valid id").catch((e: unknown) => e);
    assert.ok(failure instanceof ColossusError);
    outputs.push(String(failure), inspect(failure), JSON.stringify(failure), failure.stack ?? "");
    for (const text of outputs) assert.ok(!text.includes(BEARER), `bearer leaked in: ${text.slice(0, 200)}`);
  });
});

describe("http2 sanity", () => {
  it("the fake worker speaks HTTP/2 (guards the tests above)", async () => {
    const worker = await genuine();
    const session = http2.connect(`https://127.0.0.1:${worker.port}`, { ca: fixture("leaf.pem") });
    await new Promise<void>((resolve, reject) => {
      session.once("connect", () => { resolve(); });
      session.once("error", reject);
    });
    session.close();
  });
});
