// npm's `prepare` hook: builds dist/ so that `npm install ./sdk/typescript` (a link to this
// folder), `npm install --install-links ./sdk/typescript` and `npm pack` all give a package
// that imports. npm runs it for an installed folder without installing that folder's
// devDependencies, so the pinned build tools come first from package-lock.json (as npm does
// for a git dependency). Plain JavaScript: it runs before anything is installed.
//
// This folder's own `npm install` / `npm ci` (a developer's, or a nox session's) skips it:
// those builds are explicit (`npm run build`), and the type checks and tests need none.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const command = process.env["npm_command"] ?? "";
const ownInstall =
  (command === "install" || command === "ci") && path.resolve(process.env["INIT_CWD"] ?? "") === root;

// The outer npm's settings describe the app being installed into (its prefix, its lock
// options); the nested npm must see this folder only. Cache and user config stay.
const KEPT = new Set(["npm_config_cache", "npm_config_userconfig"]);
function cleanEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("npm_") || KEPT.has(key)));
}

function run(args) {
  execFileSync(npm, args, { cwd: root, env: cleanEnv(), stdio: ["ignore", process.stderr, process.stderr] });
}

if (!ownInstall) {
  if (!existsSync(path.join(root, "node_modules/tsup/package.json"))) {
    run(["ci", "--no-audit", "--no-fund"]);
    // The marker the nox sessions and the conformance build compare with the lock.
    const digest = createHash("sha256").update(readFileSync(path.join(root, "package-lock.json"))).digest("hex");
    writeFileSync(path.join(root, "node_modules/.colossus-lock-sha256"), digest);
  }
  run(["run", "build"]);
}
