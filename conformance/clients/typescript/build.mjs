// Builds the TypeScript SDK from this repository and then this client, on a fresh machine:
// `npm ci` from the committed lock files (skipped when node_modules already matches the
// lock), the SDK bundle, then `tsc` here. The client depends on the SDK through a file:
// link, never on the registry's copy.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.resolve(here, "../../../sdk/typescript");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

function run(cwd, command, args) {
  execFileSync(command, args, { cwd, stdio: ["ignore", process.stderr, process.stderr] });
}

function install(cwd) {
  const lock = readFileSync(path.join(cwd, "package-lock.json"));
  const digest = createHash("sha256").update(lock).digest("hex");
  const marker = path.join(cwd, "node_modules", ".colossus-lock-sha256");
  if (existsSync(marker) && readFileSync(marker, "utf8") === digest) return;
  run(cwd, npm, ["ci", "--no-audit", "--no-fund"]);
  writeFileSync(marker, digest);
}

install(sdk);
run(sdk, npm, ["run", "build"]);
install(here);
run(here, process.execPath, [path.join(here, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"]);
