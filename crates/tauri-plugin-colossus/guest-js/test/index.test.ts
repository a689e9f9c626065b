import assert from "node:assert/strict";
import { test } from "node:test";

// The mocks install themselves on `window`; Node has none.
(globalThis as unknown as { window: unknown }).window = globalThis;
const { clearMocks, mockIPC } = await import("@tauri-apps/api/mocks");
const api = await import("../src/index.js");

const TARGET = "tgt_0123456789abcdef0123456789abcdef";

test("each binding invokes its plugin command with the closed input under `input`", async () => {
  const seen: [string, unknown][] = [];
  mockIPC((cmd, args) => {
    seen.push([cmd, args]);
    if (cmd === "plugin:colossus|desktop_release_channel") return "developer_preview";
    if (cmd === "plugin:colossus|list_targets") return [];
    return { run_id: "run_1", target_id: TARGET, last_sequence: "9007199254740993" };
  });
  const run = await api.createRun({ target_id: TARGET, text: "hi", mode: { kind: "execute" } });
  assert.equal(run.last_sequence, "9007199254740993");
  await api.getRun({ target_id: TARGET, run_id: "run_1" });
  await api.cancelRun({ target_id: TARGET, run_id: "run_1" });
  await api.respondInteraction({
    target_id: TARGET,
    run_id: "run_1",
    interaction_id: "int_1",
    answer: { kind: "approval", decision: "approve" },
  });
  await api.listRuns({ target_id: TARGET });
  assert.deepEqual(await api.listTargets(), []);
  assert.equal(await api.desktopReleaseChannel(), "developer_preview");
  assert.deepEqual(
    seen.map(([cmd]) => cmd),
    ["create_run", "get_run", "cancel_run", "respond_interaction", "list_runs", "list_targets", "desktop_release_channel"].map(
      (c) => `plugin:colossus|${c}`,
    ),
  );
  assert.deepEqual(seen[0]![1], { input: { target_id: TARGET, text: "hi", mode: { kind: "execute" } } });
  assert.deepEqual(seen[5]![1], {}, "list_targets sends nothing");
  clearMocks();
});

test("the binding list is the plugin's command list", () => {
  assert.deepEqual([...api.COMMANDS], [
    "create_run", "get_run", "list_runs", "watch_run", "cancel_run", "respond_interaction", "list_targets",
    "desktop_release_channel",
  ]);
});

test("a refusal rejects with the bridge error as data", async () => {
  const refusal = { kind: "not_selected", reason: "not_selected", retryable: false, retry_after_ms: null, field: null };
  mockIPC(() => {
    throw refusal;
  });
  await assert.rejects(api.getRun({ target_id: TARGET, run_id: "run_1" }), (e) => {
    assert.deepEqual(e, refusal);
    return true;
  });
  clearMocks();
});

test("watchRun delivers channel frames in index order, whatever order they arrive in", async () => {
  type Internals = { runCallback: (id: number, data: unknown) => void };
  let channel: { id: number } | undefined;
  mockIPC((cmd, args) => {
    assert.equal(cmd, "plugin:colossus|watch_run");
    channel = (args as { onFrame: { id: number } }).onFrame;
    return null;
  });
  const frames: unknown[] = [];
  await api.watchRun({ target_id: TARGET, run_id: "run_1" }, (f) => frames.push(f));
  assert.ok(channel);
  const internals = (globalThis as unknown as { __TAURI_INTERNALS__: Internals }).__TAURI_INTERNALS__;
  const sent = [
    { frame: "text", first_sequence: "1", last_sequence: "3", text: "abc" },
    { frame: "event", sequence: "4", event: { type: "status_changed", previous: "running", status: "succeeded" } },
    { frame: "end", reason: "completed", error: null },
  ];
  internals.runCallback(channel.id, { index: 2, message: sent[2] });
  internals.runCallback(channel.id, { index: 0, message: sent[0] });
  internals.runCallback(channel.id, { index: 1, message: sent[1] });
  assert.deepEqual(frames, sent);
  clearMocks();
});
