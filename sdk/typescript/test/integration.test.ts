// Against the real reference worker over real TLS: daemon and sidecar placements.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, chmodSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import {
  CapabilityMissingError,
  Client,
  IdempotencyConflictError,
  InMemoryCredentialProvider,
  InvalidArgumentError,
  NotFoundError,
  type RunEvent,
} from "../src/index.js";
import { findWorker, ReferenceWorker, type Enrollment } from "./helpers/reference-worker.js";

const executable = findWorker();
const script = (body: string): string => `colossus-script v1\n${body}\n`;

async function events(client: Client, runId: string, afterSequence = 0): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of client.runs.watch(runId, { afterSequence, idleTimeoutMs: 20_000 })) out.push(e);
  return out;
}

describe("daemon placement against the reference worker", { skip: executable === null ? "colossus-reference-worker not installed" : false }, () => {
  let worker: ReferenceWorker;
  let enrolment: Enrollment;
  let client: Client;

  before(async () => {
    worker = new ReferenceWorker(executable ?? "");
    enrolment = worker.enroll("ts-sdk-tests");
    await worker.start();
    client = await Client.connect({
      publicApiDir: worker.apiDir,
      expectedInstanceId: enrolment.instanceId,
      expectedCertificateSha256: enrolment.certificateSha256,
      credentials: new InMemoryCredentialProvider(enrolment.bearer),
    });
  });

  after(async () => {
    await client.close();
    await worker.dispose();
  });

  it("verifies the server and exposes its limits", () => {
    assert.equal(client.serverInfo.instanceId, enrolment.instanceId);
    assert.equal(client.serverInfo.deploymentMode, "SHARED_DAEMON");
    assert.ok(client.serverInfo.limits.maxRequestBytes > 0);
  });

  it("creates, watches to the end and reads back a run", async () => {
    const created = await client.runs.create(script("say one\nsay two"));
    assert.equal(created.replayed, false);
    assert.match(created.idempotencyKey, /^ts-/);
    const seen = await events(client, created.run.runId);
    assert.deepEqual(seen.map((e) => e.sequence), seen.map((_, i) => i + 1));
    const text = seen.flatMap((e) => (e.payload.kind === "output_delta" ? [e.payload.text] : [])).join("");
    assert.equal(text, "onetwo");
    assert.equal(seen.at(-1)?.payload.kind, "terminated");
    const run = await client.runs.get(created.run.runId);
    assert.equal(run.status, "SUCCEEDED");
    assert.equal(run.lastSequence, seen.length);
  });

  it("replays a create with the same key, and refuses the key for another request", async () => {
    const key = `ts-key-${Date.now()}`;
    const first = await client.runs.create(script("say x"), { idempotencyKey: key });
    const again = await client.runs.create(script("say x"), { idempotencyKey: key });
    assert.equal(again.run.runId, first.run.runId);
    assert.equal(again.replayed, true);
    await assert.rejects(client.runs.create(script("say y"), { idempotencyKey: key }), (e: unknown) => e instanceof IdempotencyConflictError && e.idempotencyKey === key);
  });

  it("answers a prompt and resumes a watch from a cursor", async () => {
    const created = await client.runs.create(script("ask Proceed? | yes | no\nsay done"));
    const runId = created.run.runId;
    const watch = client.runs.watch(runId);
    let interaction = null;
    for await (const e of watch) {
      if (e.payload.kind === "interaction_requested") {
        interaction = e.payload.interaction;
        break;
      }
    }
    assert.ok(interaction !== null && interaction.request.kind === "prompt");
    assert.deepEqual(interaction.request.choices, ["yes", "no"]);
    const run = await client.runs.respond(runId, interaction.interactionId, { kind: "prompt", choice: "yes" });
    assert.notEqual(run.status, "WAITING_FOR_INPUT");
    const rest = await events(client, runId, watch.lastSequence);
    assert.equal(rest[0]?.sequence, watch.lastSequence + 1);
    assert.ok(rest.some((e) => e.payload.kind === "interaction_resolved"));
  });

  it("cancels a sleeping run", async () => {
    const created = await client.runs.create(script("sleep forever"));
    const cancelled = await client.runs.cancel(created.run.runId);
    assert.ok(["CANCELLING", "CANCELLED"].includes(cancelled.status));
    const seen = await events(client, created.run.runId);
    const last = seen.at(-1)?.payload;
    assert.ok(last?.kind === "terminated" && last.status === "CANCELLED");
  });

  it("lists runs through short pages and resumes from a page token", async () => {
    const pages = [];
    for await (const page of client.runs.list().pages()) pages.push(page);
    const all = pages.flatMap((p) => p.runs.map((r) => r.runId));
    assert.ok(all.length >= 4);
    assert.equal(new Set(all).size, all.length);
    const token = pages[0]?.nextPageToken ?? "";
    assert.notEqual(token, "");
    const resumed = await client.runs.list({ pageToken: token }).toArray();
    assert.deepEqual(resumed.map((r) => r.runId), all.slice(pages[0]?.runs.length));
  });

  it("uploads and downloads a verified artifact", async () => {
    const data = Buffer.alloc(300_000, 7);
    const artifact = await client.artifacts.upload(data, { mediaType: "application/octet-stream", displayName: "blob.bin" });
    assert.equal(artifact.sizeBytes, data.length);
    const downloaded = await client.artifacts.download(artifact.artifactId);
    assert.ok(Buffer.from(downloaded.data).equals(data));
  });

  it("refuses locally what the worker does not advertise, and maps worker errors", async () => {
    await assert.rejects(client.runs.create([{ artifactId: "art_x", mediaType: "image/png" }]), CapabilityMissingError);
    await assert.rejects(client.runs.create("x", { maxTurns: 101 }), (e: unknown) => e instanceof InvalidArgumentError && e.code === null && e.metadata["field"] === "max_turns");
    await assert.rejects(client.runs.get("run_doesnotexist"), (e: unknown) => e instanceof NotFoundError && e.code === "NOT_FOUND");
  });
});

describe("sidecar placement", { skip: executable === null ? "colossus-reference-worker not installed" : false }, () => {
  it("starts a private worker, runs, and ends its process group on close", async () => {
    const stateDir = mkdtempSync(path.join(os.tmpdir(), "colossus-ts-sidecar-"));
    chmodSync(stateDir, 0o700);
    const client = await Client.startSidecar({ executable: executable ?? "", applicationId: "ts-sidecar", stateDir });
    try {
      assert.equal(client.serverInfo.deploymentMode, "SIDECAR");
      const created = await client.runs.create(script("say hi"));
      const seen = await events(client, created.run.runId);
      assert.equal(seen.at(-1)?.payload.kind, "terminated");
    } finally {
      await client.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
    await assert.rejects(client.runs.get("run_x"), /closed/);
  });

  it("leaves nothing that keeps the caller's process alive once close() returns", () => {
    // A program that used a sidecar must exit when it is done, not after a shutdown grace.
    const sdk = new URL("../src/index.js", import.meta.url).href;
    const program = `
      import { Client } from ${JSON.stringify(sdk)};
      const client = await Client.startSidecar({ executable: ${JSON.stringify(executable ?? "")}, applicationId: "ts-sidecar-exit" });
      await client.close();
      console.log(JSON.stringify(process.getActiveResourcesInfo()));`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8", timeout: 60_000 });
    assert.equal(child.status, 0, child.stderr);
    const alive = JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "[]") as string[];
    assert.deepEqual(alive.filter((kind) => kind === "Timeout" || kind === "ProcessWrap" || kind === "TCPWrap"), []);
  });
});
