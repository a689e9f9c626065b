// Closing and cancelling the way Node users expect: a stopped watch cancels its stream on
// the worker, a caller's signal rejects with AbortedError, close() is idempotent, and a
// program that connects, watches and closes exits by itself (no handle left open).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { AbortedError, Client, ClientClosedError, InMemoryCredentialProvider, type Watch } from "../src/index.js";
import { BEARER, INSTANCE_ID, say, startFakeWorker, type FakeBehaviour, type FakeWorker } from "./helpers/fake-worker.js";

const RUN = "run_1";
const fast = { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 5, maxElapsedMs: 5_000 };
const workers: FakeWorker[] = [];
const clients: Client[] = [];
const hanging: FakeBehaviour = { watches: Array.from({ length: 8 }, () => ({ events: [say(RUN, 1, "a")], end: "hang" as const })) };

after(async () => {
  for (const c of clients) await c.close();
  for (const w of workers) await w.close();
});

async function connect(behaviour: FakeBehaviour): Promise<{ client: Client; worker: FakeWorker }> {
  const worker = await startFakeWorker(behaviour);
  workers.push(worker);
  const client = await Client.connect({
    publicApiDir: worker.dir,
    expectedInstanceId: INSTANCE_ID,
    expectedCertificateSha256: worker.pin,
    credentials: new InMemoryCredentialProvider(BEARER),
    retry: fast,
  });
  clients.push(client);
  return { client, worker };
}

/** Polls `condition`; the generous limit only turns a hang into a failure, never a verdict on speed. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`still waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Waits until the worker saw `count` watch streams cancelled. */
async function cancelledOnWorker(worker: FakeWorker, count: number): Promise<void> {
  await until(() => worker.cancelledWatches >= count, "the worker to see the watch cancelled");
}

async function firstEventThen(watch: Watch, action: () => void): Promise<unknown> {
  try {
    for await (const e of watch) {
      assert.equal(e.sequence, 1);
      action();
    }
    return null;
  } catch (error) {
    return error;
  }
}

describe("stopping a watch", () => {
  it("leaving a for-await loop with break cancels the stream on the worker", async () => {
    const { client, worker } = await connect(hanging);
    for await (const e of client.runs.watch(RUN)) {
      assert.equal(e.sequence, 1);
      break;
    }
    await cancelledOnWorker(worker, 1);
  });

  it("a caller's signal ends the watch with AbortedError and cancels the stream", async () => {
    const { client, worker } = await connect(hanging);
    const controller = new AbortController();
    const error = await firstEventThen(client.runs.watch(RUN, { signal: controller.signal }), () => {
      controller.abort();
    });
    assert.ok(error instanceof AbortedError, `got ${String(error)}`);
    await cancelledOnWorker(worker, 1);
  });

  it("closing the client ends a watch in progress and cancels its stream", async () => {
    const { client, worker } = await connect(hanging);
    const error = await firstEventThen(client.runs.watch(RUN), () => {
      void client.close();
    });
    assert.ok(error === null || error instanceof ClientClosedError, `got ${String(error)}`);
    await cancelledOnWorker(worker, 1);
    assert.equal(worker.watchCursors.length, 1, "the watch reopened after close");
  });
});

describe("a caller's signal on unary calls", () => {
  it("an already aborted signal rejects get, list and connect with AbortedError", async () => {
    const { client, worker } = await connect({});
    const signal = AbortSignal.abort();
    await assert.rejects(client.runs.get(RUN, { signal }), AbortedError);
    await assert.rejects(
      (async () => {
        for await (const run of client.runs.list({ signal })) assert.fail(`listed ${run.runId}`);
      })(),
      AbortedError,
    );
    const options = { publicApiDir: worker.dir, expectedInstanceId: INSTANCE_ID, expectedCertificateSha256: worker.pin, credentials: new InMemoryCredentialProvider(BEARER) };
    await assert.rejects(Client.connect(options, { signal }), AbortedError);
  });
});

/** True while any process of the group led by `pid` is alive. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("starting a sidecar", () => {
  it("a caller's signal cuts the bootstrap short with AbortedError and ends the worker's group", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "colossus-ts-silent-"));
    try {
      const pidFile = path.join(dir, "pid");
      // A worker that starts and never answers the bootstrap request.
      const executable = path.join(dir, "silent-worker");
      await fs.writeFile(executable, `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 600\n`, { mode: 0o700 });
      const controller = new AbortController();
      const starting = Client.startSidecar({ executable, applicationId: "ts-sidecar-abort", startupTimeoutMs: 3_600_000 }, { signal: controller.signal });
      let pid = 0;
      await until(async () => (pid = Number((await fs.readFile(pidFile, "utf8").catch(() => "0")).trim())) > 0, "the worker to start");
      controller.abort();
      await assert.rejects(starting, AbortedError);
      await until(() => !groupAlive(pid), "the worker's process group to end");
      await assert.rejects(Client.startSidecar({ executable, applicationId: "ts-sidecar-abort" }, { signal: AbortSignal.abort() }), AbortedError);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe("close()", () => {
  it("is idempotent, and a closed client refuses calls with ClientClosedError", async () => {
    const { client } = await connect({});
    await client.close();
    await client.close();
    await assert.rejects(client.runs.get(RUN), ClientClosedError);
  });

  it("leaves nothing keeping Node alive: a program that connects, watches and closes exits by itself", async () => {
    const worker = await startFakeWorker(hanging);
    workers.push(worker);
    const sdk = pathToFileURL(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/index.js")).href;
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "colossus-ts-exit-"));
    const script = path.join(dir, "program.mjs");
    await fs.writeFile(
      script,
      `import { Client, InMemoryCredentialProvider } from ${JSON.stringify(sdk)};
const client = await Client.connect({
  publicApiDir: ${JSON.stringify(worker.dir)},
  expectedInstanceId: ${JSON.stringify(INSTANCE_ID)},
  expectedCertificateSha256: ${JSON.stringify(worker.pin)},
  credentials: new InMemoryCredentialProvider(${JSON.stringify(BEARER)}),
});
await client.runs.get("run_1");
for await (const e of client.runs.watch("run_1")) break;
const controller = new AbortController();
const open = client.runs.watch("run_1", { signal: controller.signal });
const pending = (async () => { for await (const e of open) controller.abort(); })().catch(() => undefined);
await pending;
const third = client.runs.watch("run_1")[Symbol.asyncIterator]();
await third.next();
await client.close();
process.stdout.write("closed\\n");
`,
    );
    try {
      const child = spawn(process.execPath, ["--unhandled-rejections=strict", script], { stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      // A generous kill deadline only so a hang fails the test instead of the whole run.
      const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("exit", (c, s) => {
          resolve([c, s]);
        }));
      clearTimeout(killer);
      assert.equal(signal, null, `the program did not exit by itself after close() (stdout ${stdout}, stderr ${stderr})`);
      assert.equal(code, 0, stderr);
      assert.equal(stdout, "closed\n");
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
