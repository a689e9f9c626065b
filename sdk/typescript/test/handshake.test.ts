// A handshake the server ends without a TLS byte: a policy refusal only when a probe shows
// the listener speaks an older TLS; a listener that merely closes is a transport failure,
// retried under the normal budget. The Go SDK tests the same situations (handshake_test.go).
import assert from "node:assert/strict";
import net, { type AddressInfo } from "node:net";
import path from "node:path";
import tls from "node:tls";
import { after, describe, it } from "node:test";
import { Client, TlsPolicyError, TransportError, TrustError, type CredentialProvider } from "../src/index.js";
import { BEARER, INSTANCE_ID, fixture, startFakeWorker, writeDiscovery, type FakeWorker } from "./helpers/fake-worker.js";
import { findWorker, ReferenceWorker } from "./helpers/reference-worker.js";

class CountingProvider implements CredentialProvider {
  calls = 0;
  getBearer(): string {
    this.calls += 1;
    return BEARER;
  }
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A listener on its own port; `handle` gets each connection and its 1-based number. */
async function front(handle: (n: number, socket: net.Socket) => void): Promise<{ port: number; accepted: () => number }> {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    handle(accepted, socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  );
  return { port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

/** Reads the ClientHello, then closes without writing a byte. */
function closeSilently(socket: net.Socket): void {
  socket.once("data", () => socket.end());
}

function pipeTo(port: number, socket: net.Socket): void {
  const upstream = net.connect({ host: "127.0.0.1", port });
  upstream.on("error", () => socket.destroy());
  socket.on("error", () => upstream.destroy());
  socket.pipe(upstream).pipe(socket);
}

async function genuine(): Promise<FakeWorker> {
  const worker = await startFakeWorker();
  cleanups.push(() => worker.close());
  return worker;
}

async function connectThrough(worker: FakeWorker, port: number, provider: CredentialProvider, maxAttempts = 5): Promise<Client> {
  const dir = path.join(worker.dir, `front-${port}`);
  await writeDiscovery(dir, port, worker.pin, fixture("leaf.pem"));
  return Client.connect({
    publicApiDir: dir,
    expectedInstanceId: INSTANCE_ID,
    expectedCertificateSha256: worker.pin,
    credentials: provider,
    connectTimeoutMs: 3_000,
    retry: { maxAttempts, initialBackoffMs: 1, maxBackoffMs: 5, maxElapsedMs: 5_000 },
  });
}

describe("a handshake the server ends without a TLS byte", () => {
  it("is retried when the listener was a worker that died mid-handshake and came back", async () => {
    const worker = await genuine();
    const listener = await front((n, socket) => {
      if (n === 1) closeSilently(socket);
      else pipeTo(worker.port, socket);
    });
    const provider = new CountingProvider();
    const client = await connectThrough(worker, listener.port, provider);
    cleanups.push(() => client.close());
    assert.equal(client.serverInfo.instanceId, INSTANCE_ID);
    assert.equal(provider.calls, 1);
    assert.ok(listener.accepted() >= 3, "the failed connection, the probe and the retry");
  });

  it("is a retryable transport failure, never a trust error, when the listener always closes", async () => {
    const worker = await genuine();
    const listener = await front((_, socket) => {
      closeSilently(socket);
    });
    const provider = new CountingProvider();
    await assert.rejects(connectThrough(worker, listener.port, provider, 3), (e: unknown) => {
      assert.ok(e instanceof TransportError && !(e instanceof TrustError), `got ${String(e)}`);
      assert.equal(e.code, "UNAVAILABLE");
      return true;
    });
    assert.equal(provider.calls, 0);
    assert.ok(listener.accepted() >= 4, "each of the 3 attempts reached the listener, with its probe");
  });
});

describe("a listener with the pinned leaf over TLS 1.3 that does not agree to HTTP/2 (C4)", () => {
  it("is refused as a TLS policy error before the bearer is loaded", async () => {
    const worker = await genuine();
    const listener = tls.createServer({ cert: fixture("leaf.pem"), key: fixture("leaf.key"), minVersion: "TLSv1.3", ALPNProtocols: ["http/1.1"] }, (socket) => {
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => listener.close(() => { resolve(); })));
    const provider = new CountingProvider();
    await assert.rejects(connectThrough(worker, (listener.address() as AddressInfo).port, provider, 1), (e: unknown) => {
      assert.ok(e instanceof TlsPolicyError, `got ${String(e)}`);
      assert.equal(e.reason, "TLS_HANDSHAKE");
      return true;
    });
    assert.equal(provider.calls, 0);
  });
});

describe("a connection that dies under the connect's GetServerInfo (a killed worker)", () => {
  it("is retried as UNAVAILABLE, not reported as a cancellation nobody asked for", async () => {
    const worker = await startFakeWorker({ dropServerInfo: 1 });
    cleanups.push(() => worker.close());
    const provider = new CountingProvider();
    const client = await connectThrough(worker, worker.port, provider);
    cleanups.push(() => client.close());
    assert.equal(client.serverInfo.instanceId, INSTANCE_ID);
    assert.equal(worker.authorizations.length, 2, "the dropped GetServerInfo, then its retry");
  });

  it("fails as UNAVAILABLE once the retry policy is spent", async () => {
    const worker = await startFakeWorker({ dropServerInfo: 99 });
    cleanups.push(() => worker.close());
    await assert.rejects(connectThrough(worker, worker.port, new CountingProvider(), 2), (e: unknown) => {
      assert.ok(e instanceof TransportError, `got ${String(e)}`);
      assert.equal(e.code, "UNAVAILABLE");
      return true;
    });
    assert.equal(worker.authorizations.length, 2);
  });
});

describe("a worker that exits under the connect's GetServerInfo (nothing listens any more)", () => {
  it("fails the connect at once as UNREACHABLE, not after the read budget's elapsed time", async () => {
    const worker = await startFakeWorker({ exitOnServerInfo: true });
    cleanups.push(() => worker.close());
    const dir = path.join(worker.dir, "exits");
    await writeDiscovery(dir, worker.port, worker.pin, fixture("leaf.pem"));
    const started = performance.now();
    await assert.rejects(
      Client.connect({
        publicApiDir: dir,
        expectedInstanceId: INSTANCE_ID,
        expectedCertificateSha256: worker.pin,
        credentials: new CountingProvider(),
        connectTimeoutMs: 3_000,
        retry: { maxAttempts: 5, initialBackoffMs: 10, maxBackoffMs: 50, maxElapsedMs: 20_000 },
      }),
      (e: unknown) => {
        assert.ok(e instanceof TransportError, `got ${String(e)}`);
        assert.equal(e.reason, "UNREACHABLE");
        return true;
      },
    );
    // A sidecar's connect then sees its worker's exit and restarts it (S7), as in Go.
    assert.ok(performance.now() - started < 5_000, "the refused reconnect ended the connect");
    assert.equal(worker.authorizations.length, 1);
  });
});

const executable = findWorker();

describe("the reference worker's TLS 1.2-only listener (it drops its alert)", { skip: executable === null ? "colossus-reference-worker not installed" : false }, () => {
  it("is refused as a TLS version policy error, before the bearer is loaded", async () => {
    const worker = new ReferenceWorker(executable ?? "");
    cleanups.push(() => worker.dispose());
    const enrolment = worker.enroll("ts-sdk-tls12");
    await worker.start("--fault-control-socket", path.join(worker.root, "faults.sock"), "--fault-listener", "tls12");
    const provider = new CountingProvider();
    await assert.rejects(
      Client.connect({
        publicApiDir: worker.apiDir,
        expectedInstanceId: enrolment.instanceId,
        expectedCertificateSha256: enrolment.certificateSha256,
        credentials: provider,
      }),
      (e: unknown) => e instanceof TlsPolicyError && e.reason === "TLS_VERSION",
    );
    assert.equal(provider.calls, 0);
  });
});
