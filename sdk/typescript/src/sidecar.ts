/**
 * The sidecar placement (S7): start a private worker with no shell, in its own process
 * group, bootstrap it over inherited pipes (descriptors 3 and 4), supervise it, and end
 * the whole group on close. An unexpected exit is restarted lazily by the next call that
 * needs the worker, at most `maxRestarts` times with backoff; a request in flight when the
 * worker died fails and is never replayed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { AbortedError, SidecarError } from "./errors.js";
import type { Logger } from "./logger.js";
import {
  DEFAULT_MAX_RESTARTS,
  DEFAULT_RESTART_BACKOFF,
  DEFAULT_SHUTDOWN_GRACE_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  type SidecarOptions,
} from "./options.js";
import { Backoff, resolveRetryPolicy, sleep, type ResolvedRetryPolicy } from "./retry.js";
import { encodeRequest, MAX_FRAME, parseReply, type BootstrapReply } from "./sidecar-bootstrap.js";
import { checkPrivateDirectory } from "./transport/owner-only-file.js";

const DEFAULT_SCOPES = ["runs:execute", "runs:read", "runs:control", "prompts:respond"];

function aborted(): AbortedError {
  return new AbortedError("starting the sidecar was aborted by the caller", { code: "CANCELLED", reason: "ABORTED" });
}

function readFrame(stream: Readable, timeoutMs: number, signal?: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const finish = (error: Error | null, frame?: Buffer): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onEnd);
      if (error !== null) reject(error);
      else resolve(frame ?? Buffer.alloc(0));
    };
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 4) return;
      const length = buffered.readUInt32BE(0);
      if (length > MAX_FRAME) {
        finish(new SidecarError("the bootstrap reply is larger than 64 KiB", { reason: "BOOTSTRAP_MALFORMED" }));
        return;
      }
      if (buffered.length >= 4 + length) finish(null, buffered.subarray(4, 4 + length));
    };
    const onEnd = (): void => {
      finish(new SidecarError("the sidecar closed the bootstrap pipe before replying", { reason: "BOOTSTRAP_EOF" }));
    };
    const onAbort = (): void => {
      finish(aborted());
    };
    const timer = setTimeout(() => {
      finish(new SidecarError("the sidecar did not answer in time", { reason: "BOOTSTRAP_TIMEOUT" }));
    }, timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    stream.on("data", onData);
    stream.once("end", onEnd);
    stream.once("error", onEnd);
  });
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/** Why the worker program could not be started; a missing program says what to do. */
export function spawnFailure(executable: string, error: Error): SidecarError {
  const code = (error as NodeJS.ErrnoException).code ?? "error";
  if (code === "ENOENT") {
    return new SidecarError(
      `the sidecar worker program ${JSON.stringify(executable)} was not found: install the worker ` +
        "(the reference worker: pip install ./conformance in a checkout of colossus-sdks) or set SidecarOptions.executable to its absolute path",
      { reason: "SIDECAR_PROGRAM_NOT_FOUND", metadata: { program: executable } },
    );
  }
  return new SidecarError(`cannot start the worker (${code})`, {
    reason: "SIDECAR_SPAWN_FAILED",
    metadata: { program: executable },
  });
}

/** One spawned worker with its validated reply. */
export class SidecarProcess {
  private closing = false;
  private exitedFlag = false;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly keepalive: Writable,
    readonly reply: BootstrapReply,
    private readonly logger: Logger | undefined,
  ) {
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.exitedFlag = true;
        resolve();
        return;
      }
      child.once("exit", () => {
        this.exitedFlag = true;
        if (!this.closing) this.logger?.warn("sidecar worker exited unexpectedly", { pid: child.pid });
        resolve();
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** A signal aborted when the worker exits (for a connect that must not outwait it). */
  exitSignal(): AbortSignal {
    const controller = new AbortController();
    void this.exited.then(() => {
      controller.abort(new Error("the sidecar worker exited"));
    });
    return controller.signal;
  }

  /** True when the worker exited without being asked to. */
  get unexpectedExit(): boolean {
    return this.exitedFlag && !this.closing;
  }

  /** Whether the worker exited unexpectedly, waiting up to `ms` to find out. */
  async diedWithin(ms: number): Promise<boolean> {
    return (await this.exitedWithin(ms)) && !this.closing;
  }

  /** Whether the worker has exited, waiting up to `ms` to find out. */
  private exitedWithin(ms: number): Promise<boolean> {
    // The timer is cleared as soon as the worker exits: a pending one would keep the
    // caller's process alive for the whole grace after close() returned.
    const stop = new AbortController();
    const timedOut = sleep(ms, stop.signal).then(
      () => false,
      () => false,
    );
    return Promise.race([this.exited.then(() => true), timedOut]).finally(() => {
      stop.abort();
    });
  }

  static async spawn(options: SidecarOptions, stateDir: string, signal?: AbortSignal): Promise<SidecarProcess> {
    if (signal?.aborted === true) throw aborted();
    const argv = [...(options.extraArgs ?? []), "--sidecar", "--bootstrap-in-fd", "3", "--bootstrap-out-fd", "4"];
    const request = encodeRequest({
      stateDir,
      applicationId: options.applicationId,
      scopes: options.scopes ?? DEFAULT_SCOPES,
      roles: options.roles ?? ["default"],
      tools: options.tools ?? [],
    });
    const child = spawn(options.executable, argv, {
      shell: false,
      detached: true,
      stdio: ["ignore", "ignore", options.inheritStderr === true ? "inherit" : "ignore", "pipe", "pipe"],
    });
    const spawned = await new Promise<Error | null>((resolve) => {
      child.once("spawn", () => {
        resolve(null);
      });
      child.once("error", (error) => {
        resolve(error);
      });
    });
    if (spawned !== null) throw spawnFailure(options.executable, spawned);
    const pid = child.pid ?? 0;
    options.logger?.info("started sidecar worker", { pid });
    const input = child.stdio[3] as Writable;
    const output = child.stdio[4] as Readable;
    try {
      input.write(request);
      const reply = parseReply(await readFrame(output, options.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS, signal));
      output.destroy();
      return new SidecarProcess(child, input, reply, options.logger);
    } catch (error) {
      output.destroy();
      input.destroy();
      killGroup(pid, "SIGKILL");
      throw error;
    }
  }

  /** EOF on the bootstrap pipe, then SIGTERM and SIGKILL to the whole group. */
  async close(graceMs: number): Promise<void> {
    if (this.closing) return this.exited;
    this.closing = true;
    this.keepalive.destroy();
    const pid = this.pid;
    if (!(await this.exitedWithin(graceMs))) {
      killGroup(pid, "SIGTERM");
      if (!(await this.exitedWithin(2_000))) {
        killGroup(pid, "SIGKILL");
        await this.exitedWithin(5_000);
      }
    }
    // Stragglers in the group that outlived the leader.
    killGroup(pid, "SIGKILL");
    this.logger?.info("sidecar worker stopped", { pid });
  }
}

/** Owns the worker across restarts. */
/** How long a failed connect waits to learn whether the worker exited. */
const EXIT_NOTICE_GRACE_MS = 1_000;

export class SidecarSupervisor {
  restarts = 0;
  process: SidecarProcess | null = null;
  private readonly restartPolicy: ResolvedRetryPolicy;
  private readonly backoff: Backoff;

  private constructor(
    readonly options: SidecarOptions,
    readonly stateDir: string,
    private readonly ownedDir: boolean,
  ) {
    this.restartPolicy = resolveRetryPolicy({ ...DEFAULT_RESTART_BACKOFF, ...options.restartBackoff }, "restartBackoff");
    this.backoff = new Backoff(this.restartPolicy);
  }

  static async create(options: SidecarOptions): Promise<SidecarSupervisor> {
    if (options.stateDir === undefined) {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), "colossus-sidecar-"));
      await fs.chmod(dir, 0o700);
      return new SidecarSupervisor(options, dir, true);
    }
    await checkPrivateDirectory(options.stateDir, (m) => new SidecarError(m, { reason: "STATE_DIR_INVALID", metadata: { field: "stateDir" } }), "stateDir");
    return new SidecarSupervisor(options, options.stateDir, false);
  }

  /** Starts the worker; `signal` cuts the bootstrap short (the group is then killed). */
  async start(signal?: AbortSignal): Promise<SidecarProcess> {
    this.process = await SidecarProcess.spawn(this.options, this.stateDir, signal);
    return this.process;
  }

  needsRestart(): boolean {
    return this.process?.unexpectedExit === true;
  }

  /**
   * Whether the worker exited, after a connect to it failed. A dying worker can refuse the
   * connection just before its exit is noticed, so this waits up to EXIT_NOTICE_GRACE_MS.
   */
  async diedWhileConnecting(): Promise<boolean> {
    return (await this.process?.diedWithin(EXIT_NOTICE_GRACE_MS)) === true;
  }

  /** Replaces a worker that exited unexpectedly (bounded). */
  async restart(): Promise<SidecarProcess> {
    await this.process?.close(0);
    const max = this.options.maxRestarts ?? DEFAULT_MAX_RESTARTS;
    if (this.restarts >= max) {
      throw new SidecarError(`the sidecar exited unexpectedly and all ${max} restarts were used`, { reason: "SIDECAR_RESTARTS_EXHAUSTED" });
    }
    this.restarts += 1;
    const delay = this.backoff.next() ?? this.restartPolicy.maxBackoffMs;
    this.options.logger?.warn("restarting sidecar worker", { restart: this.restarts, delayMs: Math.round(delay) });
    await sleep(delay);
    return this.start();
  }

  async close(): Promise<void> {
    await this.process?.close(this.options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
    if (this.ownedDir) await fs.rm(this.stateDir, { recursive: true, force: true });
  }
}
