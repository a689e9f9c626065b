// `npm run build`: tsup, once per content of its inputs. Several CI sessions and the
// conformance client's build need dist/ at the same time (`npm pack` builds it through
// `prepare`); each takes a lock, and only the first rebuilds it: the others find dist/ built
// from these very inputs and leave it alone, so no reader ever sees tsup's `clean` empty it.
// Plain JavaScript: `prepare` runs it before anything else is compiled.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// Everything tsup's output depends on (with TSUP_SKIP_DTS, below).
const INPUTS = ["package.json", "package-lock.json", "tsup.config.ts", "tsconfig.json", "scripts/build.mjs", "src"];
const MARKER = path.join(root, "dist", ".colossus-build-sha256");
const LOCK = path.join(root, ".build.lock");
const WAIT_MS = 10 * 60 * 1000;
// A lock folder without its owner's PID this long after it was made is left from a crash.
const OWNERLESS_MS = 30 * 1000;

function inputFiles(relative) {
  const full = path.join(root, relative);
  if (!statSync(full).isDirectory()) return [relative];
  return readdirSync(full)
    .sort()
    .flatMap((name) => inputFiles(path.join(relative, name)));
}

function inputsDigest() {
  const hash = createHash("sha256");
  hash.update(`TSUP_SKIP_DTS=${process.env["TSUP_SKIP_DTS"] ?? ""}\n`);
  for (const file of INPUTS.flatMap(inputFiles)) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(path.join(root, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/** Whether the lock folder was left by a process that is gone. */
function stale() {
  try {
    const pid = Number(readFileSync(path.join(LOCK, "pid"), "utf8"));
    return !alive(pid);
  } catch {
    try {
      return Date.now() - statSync(LOCK).mtimeMs > OWNERLESS_MS;
    } catch {
      return false; // released meanwhile
    }
  }
}

function acquire() {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(path.join(LOCK, "pid"), String(process.pid));
      return;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
    }
    if (stale()) {
      rmSync(LOCK, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`build: ${LOCK} was held for ${WAIT_MS / 60000} minutes`);
    sleep(200);
  }
}

acquire();
try {
  const digest = inputsDigest();
  if (existsSync(MARKER) && readFileSync(MARKER, "utf8") === digest) {
    console.error("build: dist/ was built from these sources; tsup skipped");
  } else {
    rmSync(MARKER, { force: true });
    execFileSync(path.join(root, "node_modules", ".bin", "tsup"), [], { cwd: root, stdio: "inherit" });
    writeFileSync(MARKER, digest);
  }
} finally {
  rmSync(LOCK, { recursive: true, force: true });
}
