// The SDK's figures, as ratios measured in one run (rounds alternate between the two sides;
// the median and the min-max of the per-round ratios are printed):
//
// - watch throughput of a 4,099-event run: SDK events/s over a raw connect-node client that
//   reads the same run on a transport with the same options (the SDK's verified sockets),
//   each timed to its last event; and the same with the SDK timed to the end of its loop,
//   which includes the GetRun that reconciles the clean close (S1);
// - connect time: Client.connect (discovery files, handshake, bearer, GetServerInfo) over a
//   raw transport's first GetServerInfo;
// - RSS growth over a 100,000-event watch (a scripted worker in another process).
//
//   node --expose-gc build/bench/bench.js [--rounds 21] [--events 100000]
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, InMemoryCredentialProvider } from "../src/index.js";
import { RunService } from "../src/gen/colossus/api/v1alpha1/run_service_pb.js";
import { SystemService } from "../src/gen/colossus/api/v1alpha1/system_pb.js";
import { discover } from "../src/transport/descriptor.js";
import { openVerifiedSocket } from "../src/transport/verified-socket.js";
import { BEARER, INSTANCE_ID } from "../test/helpers/fake-worker.js";
import { findWorker, ReferenceWorker } from "../test/helpers/reference-worker.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const ROUNDS = option("--rounds", 21);
const LONG_EVENTS = option("--events", 100_000);

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};
const spread = (values: number[]): string => `${Math.min(...values).toFixed(3)}-${Math.max(...values).toFixed(3)}`;

interface Daemon {
  dir: string;
  instanceId: string;
  pin: string;
  bearer: string;
}

function rawClients(d: Daemon, certificatePem: string, endpoint: { host: string; port: number; url: string }) {
  const manager = new Http2SessionManager(endpoint.url, {}, {
    createConnection: () =>
      openVerifiedSocket({ endpoint, certificate: { der: Buffer.alloc(0), sha256: d.pin, pem: certificatePem }, pin: d.pin }, { alpn: ["h2"], handshakeTimeoutMs: 10_000 }),
  });
  const transport = createGrpcTransport({
    baseUrl: endpoint.url,
    sessionManager: manager,
    readMaxBytes: 4 * 1024 * 1024,
    interceptors: [(next) => (request) => {
      request.header.set("authorization", `Bearer ${d.bearer}`);
      return next(request);
    }],
  });
  return { runs: createClient(RunService, transport), system: createClient(SystemService, transport), close: () => { manager.abort(); } };
}

interface WatchFigures {
  watch_events: number;
  watch_ratio: number;
  watch_ratio_spread: string;
  watch_incl_get_run_ratio: number;
  watch_incl_get_run_ratio_spread: string;
  sdk_events_per_s: number;
  raw_events_per_s: number;
  connect_ratio: number;
  connect_ratio_spread: string;
}

async function watchAndConnect(d: Daemon): Promise<WatchFigures> {
  const found = await discover(d.dir, d.instanceId, d.pin);
  const endpoint = found.descriptor.endpoint;
  const client = await Client.connect({ publicApiDir: d.dir, expectedInstanceId: d.instanceId, expectedCertificateSha256: d.pin, credentials: new InMemoryCredentialProvider(d.bearer) });
  // 4,093 outputs and a prompt fill the ordinary budget; the cancel adds the reserved events.
  const created = await client.runs.create("colossus-script v1\nrepeat 4093 say x\nask Stop? | yes\n");
  const runId = created.run.runId;
  let total = 0;
  for await (const event of client.runs.watch(runId)) {
    total += 1;
    if (event.payload.kind === "interaction_requested") await client.runs.cancel(runId);
  }
  const raw = rawClients(d, found.certificate.pem, endpoint);
  // Events/s to the last event, and to the end of the loop (the SDK's includes its GetRun).
  const timed = async (events: AsyncIterable<unknown>): Promise<{ toLast: number; toEnd: number }> => {
    const started = performance.now();
    let n = 0;
    let last = started;
    for await (const _ of events) {
      n += 1;
      last = performance.now();
    }
    if (n !== total) throw new Error(`a watch saw ${n} events, not ${total}`);
    const ended = performance.now();
    return { toLast: n / ((last - started) / 1000), toEnd: n / ((ended - started) / 1000) };
  };
  const sdkWatch = () => timed(client.runs.watch(runId));
  const rawWatch = () => timed(raw.runs.watchRun({ runId, afterSequence: 0n }));
  const sdkConnect = async (): Promise<number> => {
    const started = performance.now();
    const c = await Client.connect({ publicApiDir: d.dir, expectedInstanceId: d.instanceId, expectedCertificateSha256: d.pin, credentials: new InMemoryCredentialProvider(d.bearer) });
    const ms = performance.now() - started;
    await c.close();
    return ms;
  };
  const rawConnect = async (): Promise<number> => {
    const started = performance.now();
    const r = rawClients(d, found.certificate.pem, endpoint);
    await r.system.getServerInfo({});
    const ms = performance.now() - started;
    r.close();
    return ms;
  };
  await sdkWatch();
  await rawWatch();
  await sdkConnect();
  await rawConnect();
  const watchRatios: number[] = [];
  const completeRatios: number[] = [];
  const connectRatios: number[] = [];
  const sdkRates: number[] = [];
  const rawRates: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    // Alternate which side goes first, so drift favours neither.
    const first = round % 2 === 0;
    const s = first ? await sdkWatch() : null;
    const r = await rawWatch();
    const sdk = s ?? (await sdkWatch());
    sdkRates.push(sdk.toLast);
    rawRates.push(r.toLast);
    watchRatios.push(sdk.toLast / r.toLast);
    completeRatios.push(sdk.toEnd / r.toEnd);
    const sc = first ? await sdkConnect() : null;
    const rc = await rawConnect();
    connectRatios.push((sc ?? (await sdkConnect())) / rc);
  }
  raw.close();
  await client.close();
  return {
    watch_events: total,
    watch_ratio: Number(median(watchRatios).toFixed(3)),
    watch_ratio_spread: spread(watchRatios),
    watch_incl_get_run_ratio: Number(median(completeRatios).toFixed(3)),
    watch_incl_get_run_ratio_spread: spread(completeRatios),
    sdk_events_per_s: Math.round(median(sdkRates)),
    raw_events_per_s: Math.round(median(rawRates)),
    connect_ratio: Number(median(connectRatios).toFixed(3)),
    connect_ratio_spread: spread(connectRatios),
  };
}

interface RssFigures {
  rss_watch_events: number;
  rss_after_5000_mib: number;
  rss_peak_mib: number;
  rss_growth_mib: number;
  rss_watch_events_per_s: number;
}

async function rssOverLongWatch(events: number): Promise<RssFigures> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const server = spawn(process.execPath, [path.join(here, "long-run-server.js"), String(events)], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await new Promise<string>((resolve) => {
    createInterface({ input: server.stdout }).once("line", resolve);
  });
  const identity = JSON.parse(line) as { dir: string; pin: string };
  const client = await Client.connect({ publicApiDir: identity.dir, expectedInstanceId: INSTANCE_ID, expectedCertificateSha256: identity.pin, credentials: new InMemoryCredentialProvider(BEARER) });
  const gc = (globalThis as { gc?: () => void }).gc;
  let baseline = 0;
  let peak = 0;
  let count = 0;
  const started = performance.now();
  for await (const event of client.runs.watch("run_bench")) {
    count += 1;
    if (event.sequence % 5_000 === 0) {
      gc?.();
      const rss = process.memoryUsage.rss();
      if (event.sequence === 5_000) baseline = rss;
      else peak = Math.max(peak, rss);
    }
  }
  const elapsed = (performance.now() - started) / 1000;
  gc?.();
  const final = process.memoryUsage.rss();
  await client.close();
  server.stdin.end();
  return {
    rss_watch_events: count,
    rss_after_5000_mib: Number((baseline / 2 ** 20).toFixed(2)),
    rss_peak_mib: Number((Math.max(peak, final) / 2 ** 20).toFixed(2)),
    rss_growth_mib: Number(((Math.max(peak, final) - baseline) / 2 ** 20).toFixed(2)),
    rss_watch_events_per_s: Math.round(count / elapsed),
  };
}

const executable = findWorker();
if (executable === null) throw new Error("the benchmark needs colossus-reference-worker (pip install ./conformance)");
const worker = new ReferenceWorker(executable);
try {
  const enrolment = worker.enroll("ts-bench");
  await worker.start("--limit", "create_rate_per_application_per_second=1000", "--limit", "create_rate_per_application_burst=1000");
  const figures = {
    ...(await watchAndConnect({ dir: worker.apiDir, instanceId: enrolment.instanceId, pin: enrolment.certificateSha256, bearer: enrolment.bearer })),
    ...(await rssOverLongWatch(LONG_EVENTS)),
  };
  console.log(JSON.stringify(figures, null, 2));
  const met = (ok: boolean): string => (ok ? "met" : "NOT met");
  console.log(`${ROUNDS} alternating rounds, a run of ${figures.watch_events} events; median (min-max) of the per-round ratios`);
  console.log(`watch ratio ${figures.watch_ratio} (${figures.watch_ratio_spread}) (target >= 0.95): ${met(figures.watch_ratio >= 0.95)}`);
  console.log(
    `watch incl. closing GetRun ratio ${figures.watch_incl_get_run_ratio} (${figures.watch_incl_get_run_ratio_spread}) (target >= 0.93): ${met(figures.watch_incl_get_run_ratio >= 0.93)}`,
  );
  console.log(`connect ratio ${figures.connect_ratio} (${figures.connect_ratio_spread}) (target <= 1.5): ${met(figures.connect_ratio <= 1.5)}`);
  console.log(`RSS growth ${figures.rss_growth_mib} MiB (target < 5 MiB): ${figures.rss_growth_mib < 5 ? "met" : "NOT met"}`);
} finally {
  await worker.dispose();
}
