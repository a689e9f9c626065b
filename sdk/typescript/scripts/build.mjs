// `npm run build`: tsup, once per content of its inputs. Several CI sessions and the
// conformance client's build need dist/ at the same time (`npm pack` builds it through
// `prepare`); each takes a lock, and only the first rebuilds it: the others find dist/ built
// from these very inputs and leave it alone, so no reader ever sees tsup's `clean` empty it.
// With COLOSSUS_TYPESCRIPT_DIST_CACHE set (./noxw sets it, outside the clone), a dist/ built
// once is kept there under the digest of its inputs, and a fresh clone of the same sources
// copies it instead of running tsup again (21 CPU-seconds, most of it the declarations).
// Plain JavaScript: `prepare` runs it before anything else is compiled.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// Everything tsup's output depends on (with TSUP_SKIP_DTS, below).
const INPUTS = ["package.json", "package-lock.json", "tsup.config.ts", "tsconfig.json", "scripts/build.mjs", "src"];
const DIST = path.join(root, "dist");
const MARKER_NAME = ".colossus-build-sha256";
const MARKER = path.join(DIST, MARKER_NAME);
const CACHE = process.env["COLOSSUS_TYPESCRIPT_DIST_CACHE"] || "";
// Builds the cache keeps; older ones are removed (each dist/ is about 2 MB).
const CACHE_KEEP = 8;
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

function builtFrom(folder, digest) {
  try {
    return readFileSync(path.join(folder, MARKER_NAME), "utf8") === digest;
  } catch {
    return false;
  }
}

/** Copies a complete cached build into dist/; false when the cache has none. */
function restore(digest) {
  const cached = path.join(CACHE, digest);
  if (!CACHE || !builtFrom(cached, digest)) return false;
  rmSync(DIST, { recursive: true, force: true });
  // The marker last, so an interrupted copy is never taken for a build.
  cpSync(cached, DIST, { recursive: true, filter: (from) => path.basename(from) !== MARKER_NAME });
  writeFileSync(MARKER, digest);
  const now = new Date();
  utimesSync(cached, now, now); // recently used: kept longest
  return true;
}

/** Keeps dist/ in the cache: copied aside, then renamed into place whole. */
function keep(digest) {
  // Not a bundle without declarations: only the mutation harness makes those, one per mutant.
  if (!CACHE || process.env["TSUP_SKIP_DTS"] === "1") return;
  mkdirSync(CACHE, { recursive: true });
  const partial = path.join(CACHE, `.${digest}.${process.pid}`);
  rmSync(partial, { recursive: true, force: true });
  cpSync(DIST, partial, { recursive: true });
  try {
    renameSync(partial, path.join(CACHE, digest));
  } catch {
    rmSync(partial, { recursive: true, force: true }); // another clone kept the same build
  }
  const builds = readdirSync(CACHE)
    .filter((name) => !name.startsWith("."))
    .map((name) => ({ name, time: statSync(path.join(CACHE, name)).mtimeMs }))
    .sort((a, b) => b.time - a.time);
  for (const old of builds.slice(CACHE_KEEP)) rmSync(path.join(CACHE, old.name), { recursive: true, force: true });
}

acquire();
try {
  const digest = inputsDigest();
  if (builtFrom(DIST, digest)) {
    console.error("build: dist/ was built from these sources; tsup skipped");
  } else if (restore(digest)) {
    console.error(`build: dist/ copied from ${path.join(CACHE, digest)}, built from these sources; tsup skipped`);
  } else {
    rmSync(MARKER, { force: true });
    execFileSync(path.join(root, "node_modules", ".bin", "tsup"), [], { cwd: root, stdio: "inherit" });
    writeFileSync(MARKER, digest);
    keep(digest);
  }
} finally {
  rmSync(LOCK, { recursive: true, force: true });
}
