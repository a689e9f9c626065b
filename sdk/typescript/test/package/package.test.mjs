// The package as a user gets it, in apps of their own (the typescript_package session):
//   - installed from the packed tarball (COLOSSUS_SDK_TARBALL, made by `npm pack`);
//   - installed from a checkout with `npm install <folder>`, the README's line: a fresh copy
//     of this folder without node_modules or dist, so the `prepare` script must build it.
// In each: `import` and `require` of the entry points; in the tarball app also `instanceof`
// across the ESM and CommonJS copies, and every README code block, run as pasted into a
// .mjs file against the reference worker (COLOSSUS_REFERENCE_WORKER, on PATH for them).
// Plain JavaScript: it runs on any Node the package supports, with nothing compiled.
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { readmeSnippets } from "./readme-snippets.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.resolve(here, "../..");
const scripts = path.join(here, "app");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const scratch = mkdtempSync(path.join(os.tmpdir(), "colossus-ts-package-"));
after(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function required(name) {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} must be set (./noxw -s typescript_package sets it)`);
  return value;
}

/** A new app folder with colossus-sdk installed from `spec` and the check scripts beside it. */
function newApp(name, spec) {
  const app = path.join(scratch, name);
  mkdirSync(app);
  writeFileSync(path.join(app, "package.json"), `${JSON.stringify({ name: `app-${name}`, private: true }, null, 2)}\n`);
  execFileSync(npm, ["install", "--no-audit", "--no-fund", spec], { cwd: app, stdio: ["ignore", process.stderr, process.stderr], timeout: 300_000 });
  cpSync(scripts, app, { recursive: true });
  return app;
}

/** Runs `node file` in the app and returns its output; a non-zero exit fails with both streams. */
function node(app, file, env = process.env) {
  const result = spawnSync(process.execPath, [file], { cwd: app, env, encoding: "utf8", timeout: 120_000 });
  assert.equal(result.status, 0, `node ${file} exited ${String(result.status)}\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe("installed from the packed tarball", () => {
  let app = "";
  before(() => {
    app = newApp("tarball", required("COLOSSUS_SDK_TARBALL"));
  });

  it("imports as ESM", () => {
    assert.match(node(app, "smoke.mjs"), /^esm ok /);
  });

  it("requires as CommonJS", () => {
    assert.match(node(app, "smoke.cjs"), /^cjs ok /);
  });

  it("recognises every error class across the ESM and CommonJS copies, both ways", () => {
    assert.match(node(app, "dual-instanceof.mjs"), /^\d+ error classes, \d+ checks, 0 mismatches$/m);
  });

  describe("README code blocks, as pasted", () => {
    const snippets = readmeSnippets(path.join(sdk, "README.md"));
    const worker = required("COLOSSUS_REFERENCE_WORKER");
    const home = path.join(scratch, "home");
    const env = { ...process.env, HOME: home, PATH: `${path.dirname(worker)}${path.delimiter}${process.env["PATH"] ?? ""}` };

    it("has blocks to run", () => {
      assert.ok(snippets.some((s) => s.mode === "run"), "no README block is marked <!-- snippet: run -->");
    });

    for (const snippet of snippets) {
      it(`README.md:${String(snippet.line)} (${snippet.mode})`, () => {
        mkdirSync(home, { recursive: true, mode: 0o700 });
        const file = `readme-${String(snippet.line)}.mjs`;
        writeFileSync(path.join(app, file), snippet.code);
        if (snippet.mode === "check") {
          const result = spawnSync(process.execPath, ["--check", file], { cwd: app, encoding: "utf8" });
          assert.equal(result.status, 0, result.stderr);
          return;
        }
        const out = node(app, file, env);
        if (snippet.expect !== null) assert.ok(out.includes(snippet.expect), `expected ${JSON.stringify(snippet.expect)} in:\n${out}`);
      });
    }
  });
});

/** `colossus-reference-worker dev` on a private HOME; resolves with its banner once it serves. */
async function startDev(worker, home) {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const dev = spawn(worker, ["dev", "--public-api-dir", path.join(home, "colossus")], {
    env: { ...process.env, HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  dev.stderr.on("data", (chunk) => {
    log += String(chunk);
  });
  after(() => {
    try {
      process.kill(-(dev.pid ?? 0), "SIGTERM");
    } catch {
      // already gone
    }
  });
  let banner = "";
  for await (const line of createInterface({ input: dev.stdout })) {
    banner += `${line}\n`;
    if (line.startsWith("Stop with Ctrl-C")) break;
  }
  dev.stdout.resume(); // keep reading, so dev never blocks on a full pipe
  return { banner, log: () => log };
}

describe("the TypeScript program `colossus-reference-worker dev` prints", () => {
  it("runs as pasted into a .mjs file: connect, create, watch to the end", async () => {
    const app = newApp("dev-snippet", required("COLOSSUS_SDK_TARBALL"));
    const home = path.join(scratch, "dev-home");
    const { banner, log } = await startDev(required("COLOSSUS_REFERENCE_WORKER"), home);
    const section = banner.split(/^--- /m).find((part) => part.startsWith("TypeScript"));
    assert.ok(section !== undefined, `no TypeScript snippet in dev's banner:\n${banner}\n${log()}`);
    const program = section.slice(section.indexOf("\n") + 1).split("\nInspect runs:")[0] ?? "";
    writeFileSync(path.join(app, "dev.mjs"), program);
    const out = node(app, "dev.mjs");
    assert.match(out, /^\d+ terminated$/m);
    const bearer = readFileSync(path.join(home, "colossus", "dev-app.bearer"), "utf8").trim();
    assert.ok(bearer.length >= 32 && !out.includes(bearer));
  });
});

describe("installed from a checkout with `npm install <folder>`", () => {
  let app = "";
  before(() => {
    // The folder as a fresh clone has it: what git would check out, nothing built or installed.
    const checkout = path.join(scratch, "checkout");
    const tracked = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "."], { cwd: sdk, encoding: "utf8" });
    for (const file of tracked.split("\0").filter((f) => f !== "")) {
      cpSync(path.join(sdk, file), path.join(checkout, file));
    }
    assert.ok(!readdirSync(checkout).includes("dist") && !readdirSync(checkout).includes("node_modules"));
    app = newApp("checkout-app", checkout);
  });

  it("imports as ESM", () => {
    assert.match(node(app, "smoke.mjs"), /^esm ok /);
  });

  it("requires as CommonJS", () => {
    assert.match(node(app, "smoke.cjs"), /^cjs ok /);
  });
});
