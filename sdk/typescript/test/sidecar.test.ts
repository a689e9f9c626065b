// The sidecar bootstrap over inherited pipes, against small stand-in programs (S7, W16).
import assert from "node:assert/strict";
import { createHash, X509Certificate } from "node:crypto";
import { mkdtempSync, writeFileSync, chmodSync, rmSync, existsSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { Client, InvalidArgumentError, Reason, SidecarError } from "../src/index.js";
import { fixture } from "./helpers/fake-worker.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "colossus-ts-sidecar-test-"));
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Writes a stand-in worker: it reads the request frame from fd 3, records its argv and pid, then does `behaviour`. */
function standIn(name: string, behaviour: string): string {
  const file = path.join(dir, `${name}.cjs`);
  writeFileSync(
    file,
    `const fs = require("node:fs");
fs.writeFileSync(${JSON.stringify(path.join(dir, name))} + ".argv", JSON.stringify(process.argv.slice(2)));
const header = Buffer.alloc(4); fs.readSync(3, header, 0, 4, null);
const body = Buffer.alloc(header.readUInt32BE(0)); let got = 0;
while (got < body.length) got += fs.readSync(3, body, got, body.length - got, null);
fs.writeFileSync(${JSON.stringify(path.join(dir, name))} + ".request", body);
const reply = (obj) => { const b = Buffer.from(JSON.stringify(obj)); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); fs.writeSync(4, Buffer.concat([h, b])); };
${behaviour}
`,
  );
  chmodSync(file, 0o700);
  return file;
}

async function start(file: string, extra: Partial<Parameters<typeof Client.startSidecar>[0]> = {}): Promise<unknown> {
  try {
    await Client.startSidecar({ executable: process.execPath, extraArgs: [file], applicationId: "app-1", startupTimeoutMs: 3_000, ...extra });
  } catch (error) {
    return error;
  }
  return null;
}

describe("sidecar bootstrap", () => {
  it("sends the grant as one frame, with the secrets nowhere in argv", async () => {
    const file = standIn("refuse", 'reply({ version: 1, error: { code: "grant_invalid", message: "no \\u0007 such scope" } });');
    const error = await start(file, { scopes: ["runs:read"], roles: ["r1"], tools: [] });
    assert.ok(error instanceof SidecarError && error.reason === "BOOTSTRAP_REFUSED" && error.metadata["code"] === "grant_invalid");
    assert.ok(!error.message.includes("\u0007"), "control characters from the worker are not echoed");
    const { readFileSync } = await import("node:fs");
    const request = JSON.parse(readFileSync(path.join(dir, "refuse.request"), "utf8")) as Record<string, unknown>;
    assert.deepEqual(Object.keys(request).sort(), ["application_id", "grant", "state_dir", "version"]);
    assert.deepEqual(request["grant"], { scopes: ["runs:read"], roles: ["r1"], tools: [] });
    assert.deepEqual(JSON.parse(readFileSync(path.join(dir, "refuse.argv"), "utf8")), ["--sidecar", "--bootstrap-in-fd", "3", "--bootstrap-out-fd", "4"]);
  });

  it("names a missing worker program and says how to fix it (same reason in every SDK)", async () => {
    const error = await start("", { executable: "colossus-no-such-worker-program", extraArgs: [], maxRestarts: 0 });
    assert.ok(error instanceof SidecarError, String(error));
    assert.equal(error.reason, Reason.SIDECAR_PROGRAM_NOT_FOUND);
    assert.equal(error.metadata["program"], "colossus-no-such-worker-program");
    // What works: the worker is the colossus-conformance distribution in ./conformance.
    assert.match(error.message, /colossus-no-such-worker-program.*not found.*pip install \.\/conformance.*executable/s);
    assert.doesNotMatch(error.message, /^ENOENT|\(ENOENT\)/);
  });

  it("treats a closed pipe without a reply as a failure", async () => {
    const error = await start(standIn("eof", "process.exit(0);"));
    assert.ok(error instanceof SidecarError && error.reason === "BOOTSTRAP_EOF");
  });

  it("gives up on a silent worker and ends its process group", async () => {
    const file = standIn("silent", `fs.writeFileSync(${JSON.stringify(path.join(dir, "silent.pid"))}, String(process.pid)); setInterval(() => {}, 1000);`);
    const error = await start(file, { startupTimeoutMs: 500 });
    assert.ok(error instanceof SidecarError && error.reason === "BOOTSTRAP_TIMEOUT");
    const { readFileSync } = await import("node:fs");
    const pid = Number(readFileSync(path.join(dir, "silent.pid"), "utf8"));
    await new Promise((r) => setTimeout(r, 200));
    assert.throws(() => process.kill(pid, 0), "the stand-in worker was killed");
  });

  it("ends the whole process group, a grandchild of the worker included", async () => {
    const grandchildPid = path.join(dir, "family.grandchild");
    const file = standIn(
      "family",
      `const child = require("node:child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
fs.writeFileSync(${JSON.stringify(grandchildPid)}, String(child.pid)); setInterval(() => {}, 1000);`,
    );
    const error = await start(file, { startupTimeoutMs: 800 });
    assert.ok(error instanceof SidecarError && error.reason === "BOOTSTRAP_TIMEOUT");
    const { readFileSync } = await import("node:fs");
    const pid = Number(readFileSync(grandchildPid, "utf8"));
    let alive = true;
    for (let i = 0; i < 50 && alive; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
      try {
        process.kill(pid, 0);
      } catch {
        alive = false;
      }
    }
    if (alive) process.kill(pid, "SIGKILL");
    assert.equal(alive, false, "the worker's own child outlived the sidecar");
  });

  it("refuses a reply with a malformed member, naming nothing secret", async () => {
    const error = await start(standIn("bad", 'reply({ version: 1, endpoint: "https://localhost:1", instance_id: "i", api_version: "v1alpha1", certificate_sha256: "0".repeat(64), certificate_pem: "x", credential_id: "c", bearer: "b".repeat(40) });'));
    assert.ok(error instanceof SidecarError && error.reason === "BOOTSTRAP_MALFORMED" && error.metadata["field"] === "endpoint");
    assert.ok(!error.message.includes("b".repeat(40)));
  });

  it("ends a connect at once when the worker exits while its socket lives on", { timeout: 20_000 }, async () => {
    // The socket is held by this process and never answers the TLS handshake, as a worker's
    // listener inherited by a grandchild would: only the worker's exit can end the connect.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as AddressInfo).port;
    const pem = fixture("leaf.pem");
    const pin = createHash("sha256").update(new X509Certificate(pem).raw).digest("hex");
    const reply = { version: 1, endpoint: `https://127.0.0.1:${port}`, instance_id: "inst-1", api_version: "v1alpha1", certificate_sha256: pin, certificate_pem: pem, credential_id: "cred-1", bearer: "b".repeat(43) };
    const file = standIn("exits-after-reply", `reply(${JSON.stringify(reply)}); setTimeout(() => process.exit(0), 300);`);
    try {
      const error = await start(file, { maxRestarts: 0, connectTimeoutMs: 60_000 });
      assert.ok(error instanceof SidecarError, String(error));
      assert.equal(error.reason, Reason.SIDECAR_RESTARTS_EXHAUSTED);
    } finally {
      silent.close();
    }
  });

  it("checks options before spawning anything", async () => {
    const marker = path.join(dir, "never.argv");
    const error = await start(standIn("never", ""), { applicationId: "has space" });
    assert.ok(error instanceof InvalidArgumentError && error.metadata["field"] === "applicationId");
    assert.equal(existsSync(marker), false);
    assert.ok((await start(standIn("never", ""), { maxRestarts: 4 })) instanceof InvalidArgumentError);
  });
});
