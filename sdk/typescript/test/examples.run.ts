// Runs every example as a program, as a user would, against the reference worker
// (the typescript_examples session; not part of the unit-test run).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { findWorker, ReferenceWorker, type Enrollment } from "./helpers/reference-worker.js";

const examples = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../examples");
const executable = findWorker();
const env = { ...process.env, COLOSSUS_REFERENCE_WORKER: executable ?? "" };

function run(name: string, args: string[] = [], input?: string): string {
  return execFileSync(process.execPath, [path.join(examples, `${name}.js`), ...args], {
    env,
    timeout: 120_000,
    encoding: "utf8",
    ...(input === undefined ? {} : { input }),
  });
}

describe("examples", { skip: executable === null ? "colossus-reference-worker not installed" : false }, () => {
  it("quickstart-sidecar prints the run's output", () => {
    assert.match(run("quickstart-sidecar"), /Hello, world\n\(SUCCEEDED\)/);
  });

  it("watch-resume sees every event exactly once across two watches", () => {
    const out = run("watch-resume");
    const sequences = [...out.matchAll(/watch: #(\d+)/g)].map((m) => Number(m[1]));
    assert.deepEqual(sequences, sequences.map((_, i) => i + 1));
    assert.match(out, /stored cursor 3/);
  });

  it("errors shows each typed branch", () => {
    const out = run("errors");
    assert.match(out, /conflict: IDEMPOTENCY_CONFLICT/);
    assert.match(out, /not found: code=NOT_FOUND reason=RUN_NOT_FOUND/);
    assert.match(out, /refused locally: needs attachments.image_input/);
  });

  describe("daemon", () => {
    let worker: ReferenceWorker;
    let enrolment: Enrollment;
    before(async () => {
      worker = new ReferenceWorker(executable ?? "");
      enrolment = worker.enroll("ts-example");
      await worker.start();
    });
    after(async () => {
      await worker.dispose();
    });
    it("connects with the four independent inputs", () => {
      const out = run("daemon", [worker.apiDir, enrolment.instanceId, enrolment.certificateSha256], enrolment.bearer);
      assert.match(out, new RegExp(`connected to ${enrolment.instanceId} \\(SHARED_DAEMON\\)`));
    });
  });
});
