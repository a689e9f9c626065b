// The watch driver against a scripted in-process gRPC server (S1 edge cases).
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { Code } from "@connectrpc/connect";
import {
  Client,
  InMemoryCredentialProvider,
  ProtocolViolationError,
  TransportError,
  WatchGapError,
  WatchIdleTimeoutError,
  type RunEvent,
  type Watch,
} from "../src/index.js";
import { RunStatus } from "../src/gen/colossus/api/v1alpha1/runs_pb.js";
import type { WatchCore } from "../src/watch-core.js";
import { BEARER, INSTANCE_ID, done, say, startFakeWorker, type FakeBehaviour, type FakeWorker } from "./helpers/fake-worker.js";

const RUN = "run_1";
const fast = { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 5, maxElapsedMs: 5_000 };
const workers: FakeWorker[] = [];
const clients: Client[] = [];

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

async function collect(watch: Watch): Promise<{ events: RunEvent[]; error: unknown }> {
  const events: RunEvent[] = [];
  try {
    for await (const e of watch) events.push(e);
    return { events, error: null };
  } catch (error) {
    return { events, error };
  }
}

const seqs = (events: RunEvent[]): number[] => events.map((e) => e.sequence);

describe("runs.watch against a scripted worker", () => {
  it("delivers a whole run and completes after GetRun agrees", async () => {
    const { client, worker } = await connect({
      watches: [{ events: [say(RUN, 1, "a"), say(RUN, 2, "b"), done(RUN, 3)] }],
      run: () => ({ runId: RUN, status: RunStatus.SUCCEEDED, lastSequence: 3n }),
    });
    const { events, error } = await collect(client.runs.watch(RUN));
    assert.equal(error, null);
    assert.deepEqual(seqs(events), [1, 2, 3]);
    assert.equal(events[2]?.payload.kind, "terminated");
    assert.ok(worker.authorizations.every((a) => a === `Bearer ${BEARER}`));
  });

  it("drops exact replays mid-stream and across a reconnect", async () => {
    const { client, worker } = await connect({
      watches: [
        { events: [say(RUN, 1, "a"), say(RUN, 2, "b"), say(RUN, 1, "a")], end: Code.Unavailable },
        { events: [say(RUN, 2, "b"), done(RUN, 3)] },
      ],
      run: () => ({ runId: RUN, status: RunStatus.SUCCEEDED, lastSequence: 3n }),
    });
    const reconnects: number[] = [];
    const { events, error } = await collect(client.runs.watch(RUN, { onReconnect: (i) => reconnects.push(i.afterSequence) }));
    assert.equal(error, null);
    assert.deepEqual(seqs(events), [1, 2, 3]);
    assert.deepEqual(reconnects, [2]);
    assert.deepEqual(worker.watchCursors, [0, 2]);
  });

  it("reopens from the cursor of the core's resume plan, not from any other copy", async () => {
    const { client, worker } = await connect({
      watches: [
        { events: [say(RUN, 1, "a"), say(RUN, 2, "b")], end: Code.Unavailable },
        { events: [say(RUN, 2, "b"), done(RUN, 3)] },
      ],
      run: () => ({ runId: RUN, status: RunStatus.SUCCEEDED, lastSequence: 3n }),
    });
    const watch = client.runs.watch(RUN);
    // A plan one event behind the core's last sequence: only a driver that takes its cursor
    // from the plan asks the worker for sequence 2 again.
    const core = (watch as unknown as { core: WatchCore<unknown> }).core;
    const plan = core.onRetryableFailure.bind(core);
    core.onRetryableFailure = (reached) => {
      const resume = plan(reached);
      return resume === null ? null : { ...resume, afterSequence: resume.afterSequence - 1 };
    };
    const { events, error } = await collect(watch);
    assert.equal(error, null);
    assert.deepEqual(seqs(events), [1, 2, 3]);
    assert.deepEqual(worker.watchCursors, [0, 1]);
  });

  it("reconnects when the connection dies under the stream (a killed worker), not only after UNAVAILABLE", async () => {
    const { client, worker } = await connect({
      watches: [{ events: [say(RUN, 1, "a")], end: "drop" }, { events: [say(RUN, 2, "b"), done(RUN, 3)] }],
      run: () => ({ runId: RUN, status: RunStatus.SUCCEEDED, lastSequence: 3n }),
    });
    const causes: (string | null)[] = [];
    const { events, error } = await collect(client.runs.watch(RUN, { onReconnect: (i) => causes.push(i.cause?.code ?? null) }));
    assert.equal(error, null);
    assert.deepEqual(seqs(events), [1, 2, 3]);
    assert.deepEqual(causes, ["UNAVAILABLE"], "Node closes the stream with CANCEL; the SDK reports the lost connection");
    assert.deepEqual(worker.watchCursors, [0, 1]);
  });

  it("fails on an altered replay", async () => {
    const { client } = await connect({ watches: [{ events: [say(RUN, 1, "a"), say(RUN, 1, "CHANGED")], end: "hang" }] });
    const { events, error } = await collect(client.runs.watch(RUN));
    assert.deepEqual(seqs(events), [1]);
    assert.ok(error instanceof ProtocolViolationError && error.reason === "WATCH_REPLAY_ALTERED");
  });

  it("fails with WatchGapError on a hole, delivering nothing past it", async () => {
    const { client } = await connect({ watches: [{ events: [say(RUN, 1, "a"), say(RUN, 3, "c")], end: "hang" }] });
    const { events, error } = await collect(client.runs.watch(RUN));
    assert.deepEqual(seqs(events), [1]);
    assert.ok(error instanceof WatchGapError);
  });

  it("a clean close before the terminal event resumes when GetRun shows the run running", async () => {
    let calls = 0;
    const { client, worker } = await connect({
      watches: [{ events: [say(RUN, 1, "a")] }, { events: [done(RUN, 2)] }],
      run: () => {
        calls += 1;
        return calls === 1 ? { runId: RUN, status: RunStatus.RUNNING, lastSequence: 1n } : { runId: RUN, status: RunStatus.SUCCEEDED, lastSequence: 2n };
      },
    });
    const { events, error } = await collect(client.runs.watch(RUN));
    assert.equal(error, null);
    assert.deepEqual(seqs(events), [1, 2]);
    assert.deepEqual(worker.watchCursors, [0, 1]);
  });

  it("a clean close that GetRun contradicts is a protocol violation", async () => {
    const { client } = await connect({
      watches: [{ events: [say(RUN, 1, "a")] }],
      run: () => ({ runId: RUN, status: RunStatus.SUCCEEDED, lastSequence: 2n }),
    });
    const { error } = await collect(client.runs.watch(RUN));
    assert.ok(error instanceof ProtocolViolationError && error.reason === "WATCH_RECONCILE_MISMATCH");
  });

  it("does not reconnect after a non-retryable code", async () => {
    const { client, worker } = await connect({ watches: [{ events: [say(RUN, 1, "a")], end: Code.PermissionDenied }] });
    const { error } = await collect(client.runs.watch(RUN));
    assert.equal((error as TransportError).code, "PERMISSION_DENIED");
    assert.deepEqual(worker.watchCursors, [0]);
  });

  it("gives up after the attempt budget with the last retryable error", async () => {
    const { client, worker } = await connect({
      watches: [{ events: [], end: Code.Unavailable }, { events: [], end: Code.Unavailable }, { events: [], end: Code.Unavailable }, { events: [], end: Code.Unavailable }],
    });
    const { error } = await collect(client.runs.watch(RUN));
    assert.ok(error instanceof TransportError && error.code === "UNAVAILABLE");
    assert.equal(worker.watchCursors.length, 3);
  });

  it("takes a partly filled retry policy per watch; the fields left out keep their defaults", async () => {
    const { client, worker } = await connect({
      watches: [{ events: [], end: Code.Unavailable }, { events: [], end: Code.Unavailable }, { events: [], end: Code.Unavailable }],
    });
    // Only maxAttempts (issue 26): before, a watch's retry needed all five fields.
    const { error } = await collect(client.runs.watch(RUN, { retry: { maxAttempts: 2, initialBackoffMs: 1 } }));
    assert.ok(error instanceof TransportError && error.code === "UNAVAILABLE");
    assert.equal(worker.watchCursors.length, 2);
    assert.throws(() => client.runs.watch(RUN, { retry: { multiplier: 0.5 } }), /multiplier/);
  });

  it("states the range of afterSequence when refusing one", async () => {
    const { client } = await connect({ watches: [] });
    for (const bad of [-1, 2 ** 53, 1.5]) {
      assert.throws(
        () => client.runs.watch(RUN, { afterSequence: bad }),
        (error: unknown) =>
          error instanceof Error && /from 0 to 9007199254740991/.test(error.message) && (error as { reason?: unknown }).reason === "FIELD_INVALID",
      );
    }
  });

  it("times out a silent stream with WatchIdleTimeoutError", async () => {
    const { client } = await connect({ watches: [{ events: [say(RUN, 1, "a")], end: "hang" }] });
    const { events, error } = await collect(client.runs.watch(RUN, { idleTimeoutMs: 200 }));
    assert.deepEqual(seqs(events), [1]);
    assert.ok(error instanceof WatchIdleTimeoutError);
  });

  it("resumes from lastSequence in another watch, and close() ends iteration quietly", async () => {
    const { client, worker } = await connect({ watches: [{ events: [say(RUN, 1, "a"), say(RUN, 2, "b")], end: "hang" }, { events: [done(RUN, 3)] }] });
    const first = client.runs.watch(RUN);
    const seen: number[] = [];
    for await (const e of first) {
      seen.push(e.sequence);
      if (e.sequence === 2) first.close();
    }
    assert.equal(first.lastSequence, 2);
    const { events } = await collect(client.runs.watch(RUN, { afterSequence: first.lastSequence }));
    assert.deepEqual([...seen, ...seqs(events)], [1, 2, 3]);
    assert.deepEqual(worker.watchCursors, [0, 2]);
  });
});
