// Conformance client for the TypeScript SDK (colossus-sdk). It speaks the protocol of
// conformance/docs/client-protocol.md: JSON lines on stdin/stdout, bearer frames on the
// descriptor named by --bearer-fd (or the FIFO of --bearer-fifo). It uses only the SDK's
// public API, performs each step and reports what happened; it never judges a case.
import { createInterface } from "node:readline";
import type * as T from "colossus-sdk";
import { sdk } from "./sdk.js";
import { errorView, Unsupported } from "./errors.js";
import { FrameReader } from "./frames.js";
import { artifactView, downloadedView, eventView, runView, serverInfoView, type Json } from "./views.js";

const PROTOCOL_VERSION = 1;
type Args = { [key: string]: Json };
type Report = { [key: string]: Json };

function log(message: string): void {
  process.stderr.write(`typescript-client: ${message}\n`);
}

/**
 * Wraps the SDK's in-memory provider and counts how often the SDK asks it (C5). A failing one
 * throws as a broken keyring would, with the bearer in its message: the SDK must report a
 * credential failure without repeating that text.
 */
class CountingCredentialProvider implements T.CredentialProvider {
  calls = 0;
  readonly #inner: T.InMemoryCredentialProvider;
  readonly #failing: boolean;
  readonly #bearer: string;
  constructor(bearer: string, failing: boolean) {
    this.#inner = new sdk.InMemoryCredentialProvider(bearer);
    this.#failing = failing;
    this.#bearer = bearer;
  }
  getBearer(): string {
    this.calls += 1;
    if (this.#failing) throw new Error(`the keyring daemon refused the entry ${this.#bearer}`);
    return this.#inner.getBearer();
  }
}

class UnresolvedReference extends Error {}

function resolve(value: Json, results: Map<string, Report>): Json {
  if (typeof value === "string" && value.startsWith("$") && value.length > 1) {
    const [step, ...path] = value.slice(1).split(".");
    let current: Json | undefined = results.get(step ?? "")?.["value"];
    for (const segment of path) {
      if (Array.isArray(current) && /^-?\d+$/.test(segment)) {
        const index = Number(segment);
        const at = index < 0 ? current.length + index : index;
        if (at < 0 || at >= current.length) throw new UnresolvedReference(value);
        current = current[at];
      } else if (current !== null && typeof current === "object" && !Array.isArray(current) && segment in current) {
        current = current[segment];
      } else throw new UnresolvedReference(value);
    }
    if (current === null || current === undefined) throw new UnresolvedReference(value);
    return current;
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, results));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, results)]));
  }
  return value;
}

function str(args: Args, name: string): string {
  const value = args[name];
  if (typeof value !== "string") throw new Unsupported(`argument ${name} must be a string`);
  return value;
}

function optStr(args: Args, name: string): string | undefined {
  const value = args[name];
  return typeof value === "string" ? value : undefined;
}

function num(args: Args, name: string, fallback: number): number {
  const value = args[name];
  return typeof value === "number" ? value : fallback;
}

interface ConnectionSpec {
  name: string;
  placement: "daemon" | "sidecar";
  [key: string]: Json;
}

class CaseRun {
  private readonly connections = new Map<string, ConnectionSpec>();
  private readonly clients = new Map<string, T.Client>();
  private readonly providers = new Map<string, CountingCredentialProvider>();
  private readonly results = new Map<string, Report>();
  private readonly defaultName: string | undefined;

  constructor(
    private readonly instruction: { case: string; connections: ConnectionSpec[]; steps: { id: string; op: string; args?: Args }[] },
    private readonly bearers: Map<string, string>,
  ) {
    for (const c of instruction.connections) this.connections.set(c.name, c);
    this.defaultName = instruction.connections[0]?.name;
  }

  private credentialCalls(name: string | undefined): number | null {
    const spec = this.connections.get(name ?? this.defaultName ?? "");
    if (spec === undefined || spec.placement !== "daemon") return null;
    return this.providers.get(spec.name)?.calls ?? 0;
  }

  private async client(name: string | undefined): Promise<T.Client> {
    const key = name ?? this.defaultName ?? "";
    const existing = this.clients.get(key);
    if (existing !== undefined) return existing;
    const spec = this.connections.get(key);
    if (spec === undefined) throw new Unsupported(`unknown connection ${key}`);
    let client: T.Client;
    if (spec.placement === "sidecar") {
      const grant = spec["grant"] as { scopes: string[]; roles: string[]; tools: string[] };
      const command = spec["worker_command"] as string[];
      client = await sdk.Client.startSidecar({
        executable: command[0] ?? "",
        extraArgs: command.slice(1),
        applicationId: spec["application_id"] as string,
        scopes: grant.scopes,
        roles: grant.roles,
        tools: grant.tools,
        stateDir: spec["state_dir"] as string,
        timeoutMs: 15_000,
        logger: stderrLogger,
      });
    } else {
      let provider = this.providers.get(key);
      if (provider === undefined) {
        provider = new CountingCredentialProvider(this.bearers.get(key) ?? "", spec["credential_provider"] === "failing");
        this.providers.set(key, provider);
      }
      client = await sdk.Client.connect({
        publicApiDir: spec["public_api_dir"] as string,
        expectedInstanceId: spec["expected_instance_id"] as string,
        expectedCertificateSha256: spec["expected_certificate_sha256"] as string,
        expectedDeploymentMode: (spec["expected_deployment_mode"] as T.DeploymentMode | undefined) ?? "SHARED_DAEMON",
        credentials: provider,
        timeoutMs: 15_000,
        connectTimeoutMs: 10_000,
        logger: stderrLogger,
      });
    }
    this.clients.set(key, client);
    return client;
  }

  async run(): Promise<{ [key: string]: Json }> {
    const reports: Report[] = [];
    for (const step of this.instruction.steps) {
      const report: Report = { id: step.id, op: step.op };
      const started = performance.now();
      const rawArgs = step.args ?? {};
      const conn = typeof rawArgs["conn"] === "string" ? rawArgs["conn"] : undefined;
      const callsBefore = step.op === "sleep" || step.op === "sync" ? null : this.credentialCalls(conn);
      try {
        const args = resolve(rawArgs, this.results) as Args;
        report["value"] = await this.perform(step.op, args, report);
      } catch (error) {
        if (error instanceof UnresolvedReference) {
          report["error"] = { kind: "unresolved_reference", message: `cannot resolve ${error.message}` };
        } else {
          report["error"] = errorView(error);
          if (error instanceof sdk.ColossusError && error.idempotencyKey !== null) {
            const value = (report["value"] ?? {}) as Report;
            value["idempotency_key"] = error.idempotencyKey;
            report["value"] = value;
          }
        }
      }
      if (callsBefore !== null && !(step.op === "close" && !this.wasOpened(conn))) {
        report["credential_calls"] = (this.credentialCalls(conn) ?? 0) - callsBefore;
        const atRelease = this.callsAtRelease.get(step.id);
        if (atRelease !== undefined) report["credential_calls_after_sync"] = (this.credentialCalls(conn) ?? 0) - atRelease;
      }
      report["elapsed_ms"] = Math.round((performance.now() - started) * 10) / 10;
      this.results.set(step.id, report);
      reports.push(report);
    }
    return { type: "result", case: this.instruction.case, steps: reports };
  }

  private readonly opened = new Set<string>();
  // Provider calls of a step's connection when its sync point was released.
  private readonly callsAtRelease = new Map<string, number>();
  private wasOpened(conn: string | undefined): boolean {
    return this.opened.has(conn ?? this.defaultName ?? "");
  }

  async close(): Promise<void> {
    for (const client of this.clients.values()) {
      try {
        await client.close();
      } catch (error) {
        log(`close failed: ${String(error)}`);
      }
    }
    this.clients.clear();
  }

  private async perform(op: string, args: Args, report: Report): Promise<Json> {
    if (op === "sleep") {
      await new Promise((r) => setTimeout(r, num(args, "seconds", 0) * 1000));
      return {};
    }
    if (op === "sync") {
      await waitForRelease(this.instruction.case, String(report["id"]));
      return {};
    }
    const conn = optStr(args, "conn");
    if (op === "close") {
      const key = conn ?? this.defaultName ?? "";
      const client = this.clients.get(key);
      this.clients.delete(key);
      if (client !== undefined) await client.close();
      return {};
    }
    this.opened.add(conn ?? this.defaultName ?? "");
    const client = await this.client(conn);
    switch (op) {
      case "connect":
        return { server_info: serverInfoView(client.serverInfo) };
      case "create_run":
        return this.createRun(client, args);
      case "get_run":
        return { run: runView(await client.runs.get(str(args, "run_id"))) };
      case "cancel_run":
        return { run: runView(await client.runs.cancel(str(args, "run_id"))) };
      case "list_runs":
        return this.listRuns(client, args, report);
      case "watch":
        return this.watch(client, args, report);
      case "wait_run": {
        const run = await client.runs.wait(str(args, "run_id"), { idleTimeoutMs: num(args, "idle_timeout_seconds", 20) * 1000 });
        return { run: runView(run) };
      }
      case "text_stream":
        return this.textStream(client, args, report);
      case "respond": {
        const answer: T.InteractionAnswer =
          "choice" in args
            ? { kind: "prompt", choice: str(args, "choice") }
            : { kind: "approval", binding: str(args, "binding"), decision: (optStr(args, "decision") ?? "APPROVE") as T.ApprovalDecision };
        return { run: runView(await client.runs.respond(str(args, "run_id"), str(args, "interaction_id"), answer)) };
      }
      case "upload_artifact": {
        let data: Buffer;
        if (typeof args["text"] === "string") data = Buffer.from(args["text"], "utf8");
        else if (typeof args["data_base64"] === "string") data = Buffer.from(args["data_base64"], "base64");
        else {
          const size = num(args, "size_bytes", 0);
          data = Buffer.alloc(size);
          for (let i = 0; i < size; i += 1) data[i] = i % 251;
        }
        const displayName = optStr(args, "display_name");
        const artifact = await client.artifacts.upload(data, {
          mediaType: str(args, "media_type"),
          ...(displayName !== undefined ? { displayName } : {}),
        });
        return { artifact: artifactView(artifact) };
      }
      case "download_artifact":
        return downloadedView(await client.artifacts.download(str(args, "artifact_id")));
      default:
        throw new Unsupported(`unsupported op ${op}`);
    }
  }

  private async createRun(client: T.Client, args: Args): Promise<Json> {
    const parts: T.InputPart[] = [];
    for (const part of (args["input"] ?? []) as Args[]) {
      if (typeof part["text"] === "string") parts.push({ text: part["text"] });
      else {
        const mediaType = optStr(part, "media_type");
        parts.push({ artifactId: str(part, "artifact_id"), ...(mediaType !== undefined ? { mediaType } : {}) });
      }
    }
    const options: { -readonly [K in keyof T.CreateRunOptions]: T.CreateRunOptions[K] } = {};
    const idempotencyKey = optStr(args, "idempotency_key");
    if (idempotencyKey !== undefined) options.idempotencyKey = idempotencyKey;
    const role = optStr(args, "role");
    if (role !== undefined) options.role = role;
    const sessionId = optStr(args, "session_id");
    if (sessionId !== undefined) options.sessionId = sessionId;
    const endUserId = optStr(args, "end_user_id");
    if (endUserId !== undefined) options.endUserId = endUserId;
    const traceparent = optStr(args, "traceparent");
    if (traceparent !== undefined) options.traceparent = traceparent;
    const tracestate = optStr(args, "tracestate");
    if (tracestate !== undefined) options.tracestate = tracestate;
    if (typeof args["max_turns"] === "number") options.maxTurns = args["max_turns"];
    const rateLimitRetries = args["rate_limit_retries"];
    const retryOptions = typeof rateLimitRetries === "number" ? { rateLimitRetries } : {};
    const mode = optStr(args, "mode");
    if (mode !== undefined) options.mode = mode as T.RunMode;
    const planAction = args["plan_action"] as Args | undefined;
    if (planAction !== undefined) {
      options.planAction = {
        sourceRunId: str(planAction, "source_run_id"),
        revision: num(planAction, "revision", 0),
        kind: str(planAction, "kind") as T.PlanActionKind,
      };
    }
    const research = args["research"] as Args | undefined;
    if (research !== undefined) {
      options.research = { depth: num(research, "depth", 0), lanes: (research["lanes"] ?? []) as T.EvidenceLane[] };
    }
    const created = await client.runs.create(parts, { ...options, ...retryOptions });
    return { run: runView(created.run), replayed: created.replayed, idempotency_key: created.idempotencyKey };
  }

  private async listRuns(client: T.Client, args: Args, report: Report): Promise<Json> {
    const statuses = (args["statuses"] ?? []) as T.RunStatus[];
    const pageToken = typeof args["page_token"] === "string" ? args["page_token"] : "";
    const pager = client.runs.list({ statuses, pageSize: num(args, "page_size", 0), pageToken });
    const maxPages = num(args, "max_pages", 1000);
    const runIds: string[] = [];
    const runStatuses: string[] = [];
    const created: string[] = [];
    const view: Report = { run_ids: runIds, statuses: runStatuses, created_run_ids: created, pages: 0, stopped_at_max_pages: false, next_page_token: "" };
    // What arrived before a failure is reported next to the error.
    report["value"] = view;
    let pages = 0;
    for await (const page of pager.pages()) {
      pages += 1;
      view["pages"] = pages;
      view["next_page_token"] = page.nextPageToken;
      for (const run of page.runs) {
        runIds.push(run.runId);
        runStatuses.push(run.status);
      }
      if (pages === 1) {
        for (const text of (args["create_after_first_page"] ?? []) as string[]) {
          created.push((await client.runs.create(text)).run.runId);
        }
      }
      if (pages >= maxPages) {
        view["stopped_at_max_pages"] = true;
        break;
      }
    }
    return view;
  }

  private async textStream(client: T.Client, args: Args, report: Report): Promise<Json> {
    const texts: Json[] = [];
    const value: Report = { texts, completed: false };
    report["value"] = value; // the pieces so far are reported on failure too
    const stream = client.runs.textStream(str(args, "run_id"), {
      afterSequence: num(args, "after_sequence", 0),
      idleTimeoutMs: num(args, "idle_timeout_seconds", 20) * 1000,
    });
    try {
      for await (const text of stream) texts.push(text);
    } finally {
      stream.close();
    }
    value["completed"] = true;
    return value;
  }

  private async watch(client: T.Client, args: Args, report: Report): Promise<Json> {
    const events: Json[] = [];
    const hooks: Json[] = [];
    const until = optStr(args, "until_kind");
    const limit = num(args, "max_events", 0);
    const syncAfter = num(args, "sync_after_events", 0);
    const value: Report = { events, completed: false, reconnects: 0 };
    report["value"] = value;
    const watch = client.runs.watch(str(args, "run_id"), {
      afterSequence: num(args, "after_sequence", 0),
      idleTimeoutMs: num(args, "idle_timeout_seconds", 20) * 1000,
      onReconnect: (info) => {
        hooks.push({ hook: "reconnect", after_sequence: info.afterSequence, attempt: info.attempt });
        report["hooks"] = hooks;
        value["reconnects"] = hooks.length; // reported on failure too
      },
    });
    let stoppedEarly = false;
    try {
      for await (const event of watch) {
        const view = eventView(event);
        events.push(view);
        // The sync point: the runner acts on the worker while this same iterator waits.
        if (syncAfter > 0 && events.length === syncAfter) {
          await waitForRelease(this.instruction.case, String(report["id"]));
          this.callsAtRelease.set(String(report["id"]), this.credentialCalls(optStr(args, "conn")) ?? 0);
        }
        if ((until !== undefined && view["kind"] === until) || (limit > 0 && events.length >= limit)) {
          stoppedEarly = true;
          break;
        }
      }
    } finally {
      watch.close();
    }
    value["completed"] = !stoppedEarly;
    value["reconnects"] = hooks.length;
    return value;
  }
}

const stderrLogger: T.Logger = {
  debug: () => undefined,
  info: (message, fields) => log(`${message} ${fields === undefined ? "" : JSON.stringify(fields)}`),
  warn: (message, fields) => log(`warn: ${message} ${fields === undefined ? "" : JSON.stringify(fields)}`),
  error: (message, fields) => log(`error: ${message} ${fields === undefined ? "" : JSON.stringify(fields)}`),
};

function write(message: { [key: string]: Json }): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

// One reader of stdin for the protocol loop and for sync points inside a case.
let input: AsyncIterator<string> | undefined;

async function nextLine(): Promise<string | undefined> {
  if (input === undefined) throw new Error("stdin is not open");
  for (;;) {
    const next = await input.next();
    if (next.done === true) return undefined;
    if (next.value.trim() !== "") return next.value;
  }
}

// Tells the runner a step reached its sync point, then waits until the runner releases it
// (it restarts or stops the worker meanwhile); the caller goes on with the same SDK objects.
async function waitForRelease(caseName: string, step: string): Promise<void> {
  write({ type: "sync", case: caseName, step });
  const line = await nextLine();
  if (line === undefined) throw new Error(`stdin closed while waiting at sync point ${step}`);
  const message = JSON.parse(line) as { type?: string; step?: string };
  if (message.type !== "release" || message.step !== step) {
    throw new Error(`expected the release of sync point ${step}, got a ${String(message.type)} message`);
  }
}

function hello(): { [key: string]: Json } {
  const policy = sdk.DEFAULT_RETRY_POLICY;
  return {
    type: "client_hello",
    protocol_version: PROTOCOL_VERSION,
    sdk: "typescript",
    sdk_version: sdk.VERSION,
    features: ["daemon", "sidecar", "reconnect_hook", "artifacts", "credential_calls"],
    retry_budget: {
      read_attempts: policy.maxAttempts,
      watch_attempts: policy.maxAttempts,
      watch_elapsed_seconds: policy.maxElapsedMs / 1000,
    },
  };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  let frames: FrameReader | undefined;
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === "--bearer-fd") frames = FrameReader.fromFd(Number(argv[i + 1]));
    if (argv[i] === "--bearer-fifo") frames = FrameReader.fromPath(argv[i + 1] ?? "");
  }
  if (frames === undefined) {
    log("--bearer-fd or --bearer-fifo is required");
    return 2;
  }
  input = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  for (;;) {
    const line = await nextLine();
    if (line === undefined) break;
    const message = JSON.parse(line) as { type?: string; case?: string; connections?: ConnectionSpec[] };
    if (message.type === "hello") write(hello());
    else if (message.type === "shutdown") return 0;
    else if (message.type === "case") {
      const bearers = new Map<string, string>();
      for (const c of message.connections ?? []) {
        if (c["bearer_frame"] === true) bearers.set(c.name, await frames.read());
      }
      log(`case ${message.case ?? "?"}`);
      const run = new CaseRun(message as never, bearers);
      let result: { [key: string]: Json };
      try {
        result = await run.run();
      } catch (error) {
        result = { type: "result", case: message.case ?? "", steps: [], fatal: String(error).slice(0, 500) };
      } finally {
        await run.close();
      }
      write(result);
    } else {
      log(`unknown message type ${String(message.type)}`);
      return 2;
    }
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(`fatal: ${String(error)}`);
    process.exit(1);
  },
);
