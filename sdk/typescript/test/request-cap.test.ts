// C7 holds for every call: a worker may advertise a request cap smaller than a read, a
// watch, a listing, a cancel or a download request, or than an upload's manifest, and the
// client must refuse each locally instead of sending it.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { Client, ResourceExhaustedError } from "../src/index.js";
import { daemonOptions, daemonServerInfo, startFakeWorker, type FakeWorker } from "./helpers/fake-worker.js";

const workers: FakeWorker[] = [];
const clients: Client[] = [];

after(async () => {
  for (const c of clients) await c.close();
  for (const w of workers) await w.close();
});

const longId = (prefix: string): string => `${prefix}_${"a".repeat(60)}`;

describe("the advertised request cap", () => {
  it("refuses every kind of call over it before anything is sent", async () => {
    const worker = await startFakeWorker({
      serverInfo: daemonServerInfo({ maxRequestBytes: 48n }),
    });
    workers.push(worker);
    const client = await Client.connect(daemonOptions(worker));
    clients.push(client);
    const sentAtConnect = worker.authorizations.length;
    const calls: ReadonlyArray<readonly [string, () => Promise<unknown>]> = [
      ["GetRun", () => client.runs.get(longId("run"))],
      ["CancelRun", () => client.runs.cancel(longId("run"))],
      ["ListRuns", () => client.runs.list({ pageToken: "t".repeat(60) }).pages().next()],
      ["WatchRun", () => client.runs.watch(longId("run"))[Symbol.asyncIterator]().next()],
      ["DownloadArtifact", () => client.artifacts.download(longId("art"))],
      // The manifest alone (a 64-digit SHA-256) is over the cap; the chunks would fit.
      ["UploadArtifact", () => client.artifacts.upload(new TextEncoder().encode("0123456789"), { mediaType: "text/plain" })],
    ];
    for (const [name, call] of calls) {
      await assert.rejects(
        call,
        (e: unknown) => e instanceof ResourceExhaustedError && e.reason === "REQUEST_TOO_LARGE" && e.code === null,
        name,
      );
    }
    assert.equal(worker.authorizations.length, sentAtConnect, "no call reached the worker");
  });
});
