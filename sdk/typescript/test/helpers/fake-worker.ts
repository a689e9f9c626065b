// An in-process gRPC server over loopback TLS 1.3 with a throw-away P-256 leaf, scripted
// per test, plus discovery files that point at it. It records what a real worker's
// observer would: authorization headers, TLS connections, watch cursors.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { promises as fs, readFileSync } from "node:fs";
import http2 from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { InMemoryCredentialProvider } from "../../src/credentials.js";
import type { DaemonOptions } from "../../src/options.js";
import { sha256Hex, parseLeafCertificate } from "../../src/transport/certificate.js";
import { RunService, type WatchRunRequest } from "../../src/gen/colossus/api/v1alpha1/run_service_pb.js";
import { RunEventSchema, RunSchema, RunStatus, type RunEvent } from "../../src/gen/colossus/api/v1alpha1/runs_pb.js";
import { DeploymentMode, ServerInfoSchema, SystemService, type ServerInfo } from "../../src/gen/colossus/api/v1alpha1/system_pb.js";

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../test/fixtures");
export const fixture = (name: string): string => readFileSync(path.join(fixtures, name), "utf8");

export const BEARER = "test-bearer-0123456789abcdefghijklmnopqrstuvwxyz";
export const INSTANCE_ID = "wkr_fake";

export type EventInit = MessageInitShape<typeof RunEventSchema>;

export function event(runId: string, sequence: number, payload: NonNullable<EventInit["payload"]>): RunEvent {
  return create(RunEventSchema, { runId, sequence: BigInt(sequence), payload });
}
export const say = (runId: string, sequence: number, text: string): RunEvent =>
  event(runId, sequence, { case: "outputDelta", value: { text } });
export const done = (runId: string, sequence: number): RunEvent =>
  event(runId, sequence, { case: "terminated", value: { status: RunStatus.SUCCEEDED } });

/** One scripted WatchRun call: events to send, then how the stream ends. */
export interface WatchScript {
  readonly events: readonly RunEvent[];
  /** `"drop"`: the worker's connections die under the stream (as when it is killed). */
  readonly end?: "ok" | Code | "hang" | "drop";
}

export interface FakeBehaviour {
  readonly watches?: readonly WatchScript[];
  readonly run?: (runId: string) => MessageInitShape<typeof RunSchema>;
  readonly serverInfo?: MessageInitShape<typeof ServerInfoSchema>;
  /** How many `GetServerInfo` calls die unanswered with every connection (a killed worker). */
  readonly dropServerInfo?: number;
  /** The first `GetServerInfo` ends the worker: it stops listening and drops every connection. */
  readonly exitOnServerInfo?: boolean;
  readonly cert?: string;
  readonly key?: string;
  readonly chain?: string;
}

export interface FakeWorker {
  readonly port: number;
  readonly dir: string;
  readonly pin: string;
  readonly authorizations: string[];
  readonly watchCursors: number[];
  tlsConnections: number;
  /** Hanging watch streams that ended because the client cancelled them. */
  cancelledWatches: number;
  close(): Promise<void>;
}

/** Options that connect a client to `worker` with the test bearer; `extra` adds to them. */
export function daemonOptions(worker: FakeWorker, extra: Partial<DaemonOptions> = {}): DaemonOptions {
  return {
    publicApiDir: worker.dir,
    expectedInstanceId: INSTANCE_ID,
    expectedCertificateSha256: worker.pin,
    credentials: new InMemoryCredentialProvider(BEARER),
    ...extra,
  };
}

export async function writeDiscovery(dir: string, port: number, pin: string, pem: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.chmod(dir, 0o700);
  const descriptor = { endpoint: `https://127.0.0.1:${port}`, instance_id: INSTANCE_ID, pid: process.pid, api_version: "v1alpha1", certificate_sha256: pin };
  await fs.writeFile(path.join(dir, "endpoint.json"), JSON.stringify(descriptor), { mode: 0o600 });
  await fs.writeFile(path.join(dir, "certificate.pem"), pem, { mode: 0o600 });
}

/** What a shared daemon with the `artifacts` capability answers; `limits` replaces its defaults. */
export function daemonServerInfo(limits: { readonly maxRequestBytes?: bigint; readonly maxResponseBytes?: bigint } = {}): ServerInfo {
  return create(ServerInfoSchema, {
    instanceId: INSTANCE_ID,
    apiPackage: "colossus.api.v1alpha1",
    apiVersion: "v1alpha1",
    apiMajor: 1,
    deploymentMode: DeploymentMode.SHARED_DAEMON,
    capabilities: ["artifacts"],
    limits: { maxRequestBytes: 2n * 1024n * 1024n, maxResponseBytes: 4n * 1024n * 1024n, maxTurns: 100, maxInputParts: 128, ...limits },
  });
}

export async function startFakeWorker(behaviour: FakeBehaviour = {}, port = 0): Promise<FakeWorker> {
  const cert = behaviour.cert ?? fixture("leaf.pem");
  const key = behaviour.key ?? fixture("leaf.key");
  const authorizations: string[] = [];
  const watchCursors: number[] = [];
  let watchIndex = 0;
  let exited: Promise<void> | undefined;
  const routes = (router: ConnectRouter): void => {
    router.service(SystemService, {
      async getServerInfo(_request, context) {
        authorizations.push(context.requestHeader.get("authorization") ?? "");
        if (behaviour.exitOnServerInfo === true) {
          exited ??= new Promise<void>((resolve) => {
            server.close(() => {
              resolve();
            });
          });
          for (const session of sessions) session.destroy();
          for (const socket of sockets) socket.destroy();
          return await new Promise<never>(() => undefined);
        }
        if (authorizations.length <= (behaviour.dropServerInfo ?? 0)) {
          for (const session of sessions) session.destroy();
          return await new Promise<never>(() => undefined);
        }
        const info = daemonServerInfo();
        if (behaviour.serverInfo !== undefined) Object.assign(info, create(ServerInfoSchema, behaviour.serverInfo), behaviour.serverInfo);
        return { serverInfo: info };
      },
    });
    router.service(RunService, {
      getRun(request, context) {
        authorizations.push(context.requestHeader.get("authorization") ?? "");
        const run = behaviour.run?.(request.runId) ?? { runId: request.runId, status: RunStatus.SUCCEEDED };
        return { run };
      },
      async *watchRun(request: WatchRunRequest, context) {
        authorizations.push(context.requestHeader.get("authorization") ?? "");
        watchCursors.push(Number(request.afterSequence));
        const script = behaviour.watches?.[watchIndex] ?? { events: [], end: "ok" };
        watchIndex += 1;
        for (const e of script.events) yield { event: e };
        if (script.end === "hang") {
          await new Promise<void>((resolve) => {
            context.signal.addEventListener("abort", () => {
              worker.cancelledWatches += 1;
              resolve();
            });
          });
          return;
        }
        if (script.end === "drop") {
          // Let the events already yielded leave first (Node 24 sends them on a later turn of the
          // event loop), as a worker that dies after writing them would have.
          await new Promise((resolve) => setTimeout(resolve, 20));
          for (const session of sessions) session.destroy();
          return;
        }
        if (script.end !== undefined && script.end !== "ok") throw new ConnectError("scripted failure", script.end);
      },
    });
  };
  const server = http2.createSecureServer(
    { cert: behaviour.chain ?? cert, key, minVersion: "TLSv1.3", allowHTTP1: false },
    connectNodeAdapter({ routes }),
  );
  const worker = {
    port: 0,
    dir: await fs.mkdtemp(path.join(os.tmpdir(), "colossus-ts-test-")),
    pin: sha256Hex(parseLeafCertificate(Buffer.from(cert)).der),
    authorizations,
    watchCursors,
    tlsConnections: 0,
    cancelledWatches: 0,
    close: async (): Promise<void> => {
      // A worker that exited (exitOnServerInfo) has closed its listener already.
      const closed =
        exited ??
        new Promise<void>((resolve) => {
          server.close(() => {
            resolve();
          });
        });
      await new Promise<void>((resolve) => {
        void closed.then(resolve);
        // Drop open sessions so close() finishes, and connections that never became one (a
        // TLS probe dropped mid-handshake: Node 24 keeps it until the handshake timeout).
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      });
      await fs.rm(worker.dir, { recursive: true, force: true });
    },
  };
  const sessions = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  server.on("secureConnection", () => {
    worker.tlsConnections += 1;
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  worker.port = (server.address() as AddressInfo).port;
  await writeDiscovery(worker.dir, worker.port, worker.pin, cert);
  return worker;
}

export function codeOf(name: keyof typeof Code): Code {
  return Code[name];
}
