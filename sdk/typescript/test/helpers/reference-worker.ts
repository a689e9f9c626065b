// Drives the real reference worker as a subprocess: enrol (bearer over an inherited pipe),
// serve, stop. Where the worker must be present (COLOSSUS_REQUIRE_WORKER=1, set by the
// nox sessions) a missing worker is an error, never a reason to skip.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, rmSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export const ALL_SCOPES = ["runs:execute", "runs:read", "runs:control", "prompts:respond", "approvals:respond", "artifacts:read", "artifacts:write"];

export function findWorker(): string | null {
  const explicit = process.env["COLOSSUS_REFERENCE_WORKER"];
  if (explicit !== undefined && explicit !== "") return explicit;
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, "colossus-reference-worker");
    if (dir !== "" && existsSync(candidate)) return candidate;
  }
  if (process.env["COLOSSUS_REQUIRE_WORKER"] === "1") {
    throw new Error("COLOSSUS_REQUIRE_WORKER=1 but no colossus-reference-worker was found");
  }
  return null;
}

export interface Enrollment {
  readonly instanceId: string;
  readonly certificateSha256: string;
  readonly bearer: string;
}

export class ReferenceWorker {
  readonly root: string;
  readonly apiDir: string;
  private process: ChildProcess | null = null;

  constructor(readonly executable: string) {
    this.root = mkdtempSync(path.join(os.tmpdir(), "colossus-ts-worker-"));
    this.apiDir = path.join(this.root, "public-api");
    mkdirSync(this.apiDir, { mode: 0o700 });
    chmodSync(this.apiDir, 0o700);
  }

  /** Enrols an application while the worker is stopped; the bearer arrives on fd 3. */
  enroll(applicationId: string, scopes: readonly string[] = ALL_SCOPES): Enrollment {
    const argv = ["--public-api-dir", this.apiDir, "--enroll-application", applicationId, "--role", "default", "--bearer-fd", "3", "--output", "json"];
    for (const scope of scopes) argv.push("--scope", scope);
    const result = spawnSync(this.executable, argv, { stdio: ["ignore", "pipe", "pipe", "pipe"], timeout: 60_000 });
    if (result.status !== 0) throw new Error(`enrolment failed (${String(result.status)}): ${String(result.stderr).slice(-2000)}`);
    const data = JSON.parse(String(result.stdout)) as { instance_id: string; certificate_sha256: string };
    const bearer = String((result.output as (Buffer | null)[])[3] ?? "").trim();
    return { instanceId: data.instance_id, certificateSha256: data.certificate_sha256, bearer };
  }

  async start(...extra: string[]): Promise<void> {
    const log = openSync(path.join(this.root, "worker.log"), "a");
    this.process = spawn(this.executable, ["--public-api-dir", this.apiDir, ...extra], { stdio: ["ignore", log, log], detached: true });
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (existsSync(path.join(this.apiDir, "endpoint.json"))) return;
      if (this.process.exitCode !== null) throw new Error("the worker exited during start");
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the worker did not publish endpoint.json in time");
  }

  async stop(): Promise<void> {
    const child = this.process;
    this.process = null;
    if (child?.pid === undefined) return;
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null) resolve();
      else child.once("exit", () => { resolve(); });
    });
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
    await exited;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.root, { recursive: true, force: true });
  }
}
