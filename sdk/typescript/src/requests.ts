/**
 * Validation and construction of every request. Everything the SDK can refuse locally is
 * refused here with a typed error naming the field, before a byte is sent: grammars, the
 * worker's advertised input limits (W7) and capability gates (S4). The request cap (C7)
 * is not checked here but on the channel, for every message of every call
 * (`transport/request-cap.ts`).
 */
import { create } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import { CapabilityMissingError, InvalidArgumentError, ResourceExhaustedError, invalidArgument } from "./errors.js";
import {
  ArtifactManifestSchema,
  DownloadArtifactRequestSchema,
  type ArtifactManifest,
  type DownloadArtifactRequest,
} from "./gen/colossus/api/v1alpha1/artifacts_pb.js";
import {
  ApprovalAnswerSchema,
  ApprovalDecision as PbApprovalDecision,
  PromptAnswerSchema,
  CancelRunRequestSchema,
  CreateRunRequestSchema,
  GetRunRequestSchema,
  ListRunsRequestSchema,
  RespondInteractionRequestSchema,
  WatchRunRequestSchema,
  type CancelRunRequest,
  type CreateRunRequest,
  type GetRunRequest,
  type ListRunsRequest,
  type RespondInteractionRequest,
  type WatchRunRequest,
} from "./gen/colossus/api/v1alpha1/run_service_pb.js";
import * as pbRuns from "./gen/colossus/api/v1alpha1/runs_pb.js";
import type * as m from "./models.js";
import { isOpaqueId, isPin } from "./transport/grammar.js";

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;
const END_USER = /^[A-Za-z0-9._:@+-]{1,128}$/;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/;
const ROLE = /^[A-Za-z0-9._:-]{1,64}$/;

export const CAP_ARTIFACTS = "artifacts";
export const CAP_IMAGE_INPUT = "attachments.image_input";
export const CAP_PLANS_CONTINUE = "plans.continue";
export const CAP_RESEARCH = "research";

/** A fresh key in the contract's grammar, generated once per `create` call. */
export function newIdempotencyKey(): string {
  return `ts-${randomUUID()}`;
}

export function checkIdempotencyKey(key: unknown): string {
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    throw invalidArgument("idempotencyKey must be 1-128 characters of [A-Za-z0-9._:-]", "idempotency_key", "IDEMPOTENCY_KEY_INVALID");
  }
  return key;
}

export function checkId(value: unknown, field: string): string {
  if (!isOpaqueId(value)) throw invalidArgument(`${field} must be 1-64 characters of [A-Za-z0-9_-]`, field);
  return value;
}

function checkCount(value: unknown, field: string, max: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > max) {
    throw invalidArgument(`${field} must be an integer from 0 to ${max}`, field);
  }
  return value;
}

/** S4: refuse locally when the worker does not advertise `capability`. */
export function requireCapability(info: m.ServerInfo, capability: string, what: string): void {
  if (!info.capabilities.has(capability)) {
    throw new CapabilityMissingError(`${what} needs the "${capability}" capability, which this worker does not advertise`, {
      reason: "CAPABILITY_NOT_SUPPORTED",
      metadata: { capability },
    });
  }
}

/** A protobuf enum value by its name; an unknown name is refused with the names allowed, as in every SDK. */
function enumValue<E extends number>(table: Readonly<Record<string, E | string>>, name: unknown, field: string): E {
  const value = typeof name === "string" && name !== "UNSPECIFIED" ? table[name] : undefined;
  if (value === undefined || typeof value === "string") {
    const allowed = Object.entries(table)
      .filter(([, v]) => typeof v === "number" && v !== 0)
      .map(([key]) => key)
      .join(", ");
    const given = typeof name === "string" ? JSON.stringify(name.slice(0, 40)) : typeof name;
    throw invalidArgument(`${field} must be one of ${allowed}, not ${given}`, field);
  }
  return value;
}

function inputParts(parts: readonly m.InputPart[], info: m.ServerInfo): pbRuns.InputPart[] {
  const limits = info.limits;
  if (parts.length === 0) throw invalidArgument("input needs at least one part", "input");
  if (limits.maxInputParts > 0 && parts.length > limits.maxInputParts) {
    throw new InvalidArgumentError(`input has ${parts.length} parts; the worker accepts ${limits.maxInputParts}`, {
      reason: "INPUT_TOO_MANY_PARTS",
      metadata: { field: "input", limit: String(limits.maxInputParts) },
    });
  }
  let textBytes = 0;
  const result = parts.map((part, index): pbRuns.InputPart => {
    // Checked at run time too: JavaScript callers can pass anything.
    const given = part as unknown as Record<string, unknown> | string | null;
    if (typeof given === "string" || (typeof given === "object" && given !== null && "text" in given)) {
      const text = typeof given === "string" ? given : given["text"];
      if (typeof text !== "string") throw invalidArgument(`input[${index}].text must be a string`, "input");
      textBytes += Buffer.byteLength(text, "utf8");
      return create(pbRuns.InputPartSchema, { kind: { case: "text", value: text } });
    }
    if (typeof given !== "object" || given === null || !("artifactId" in given)) {
      throw invalidArgument(`input[${index}] must be a string, { text } or { artifactId }`, "input");
    }
    requireCapability(info, CAP_ARTIFACTS, "an artifact input part");
    const mediaType = given["mediaType"];
    if (typeof mediaType === "string" && mediaType.toLowerCase().startsWith("image/")) requireCapability(info, CAP_IMAGE_INPUT, "an image input part");
    const artifactId = checkId(given["artifactId"], "input.artifact.artifact_id");
    return create(pbRuns.InputPartSchema, { kind: { case: "artifact", value: { artifactId } } });
  });
  if (limits.maxInputBytes > 0 && textBytes > limits.maxInputBytes) {
    throw new InvalidArgumentError(`input text is ${textBytes} bytes; the worker accepts ${limits.maxInputBytes}`, {
      reason: "INPUT_TOO_LARGE",
      metadata: { field: "input", limit: String(limits.maxInputBytes) },
    });
  }
  return result;
}

/** Options of `runs.create` besides the input. */
export interface CreateRunOptions {
  /** Your key for safe retries; generated once per call when omitted. */
  readonly idempotencyKey?: string;
  /** Default `EXECUTE`. */
  readonly mode?: m.RunMode;
  /** Required for `RESEARCH` runs. */
  readonly research?: m.ResearchOptions;
  /** A granted logical role; default the grant's first role. */
  readonly role?: string;
  /** 0 (the worker's default) to the advertised maximum. */
  readonly maxTurns?: number;
  /** Continue a session; omitted, the worker assigns one. */
  readonly sessionId?: string;
  /** Caller-asserted correlation data (may be PII; never an authorization input). */
  readonly endUserId?: string;
  /** Revise or execute a draft plan (needs `plans.continue`). */
  readonly planAction?: m.PlanAction;
  /** W3C trace context for this run. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export function checkTraceContext(traceparent: string, tracestate: string | undefined): void {
  const match = TRACEPARENT.exec(traceparent);
  if (match === null || /^0+$/.test(match[1] ?? "") || /^0+$/.test(match[2] ?? "")) {
    throw invalidArgument("traceparent must be a W3C version-00 traceparent", "traceparent");
  }
  if (tracestate !== undefined && (Buffer.byteLength(tracestate) > 512 || !/^[\x20-\x7e]*$/.test(tracestate))) {
    throw invalidArgument("tracestate must be printable ASCII of at most 512 bytes", "tracestate");
  }
}

export function buildCreateRun(
  info: m.ServerInfo,
  key: string,
  input: string | readonly m.InputPart[],
  options: CreateRunOptions,
  trace: { readonly traceparent: string; readonly tracestate?: string } | null,
): CreateRunRequest {
  checkIdempotencyKey(key);
  const parts = inputParts(typeof input === "string" ? [input] : Array.isArray(input) ? input : [], info);
  const request = create(CreateRunRequestSchema, { idempotencyKey: key, input: parts });
  const mode = options.mode === undefined || options.mode === "UNSPECIFIED" ? "EXECUTE" : options.mode;
  request.mode = enumValue(pbRuns.RunMode, mode, "mode");
  if (mode === "RESEARCH") {
    requireCapability(info, CAP_RESEARCH, "a research run");
    const research = options.research;
    if (research === undefined) throw invalidArgument("a research run needs research options", "research");
    if (!Number.isInteger(research.depth) || research.depth < 1 || research.depth > 5) {
      throw invalidArgument("research.depth must be an integer from 1 to 5", "research.depth");
    }
    const lanes = research.lanes.map((lane) => enumValue(pbRuns.EvidenceLane, lane, "research.lanes"));
    if (lanes.length === 0 || new Set(lanes).size !== lanes.length) {
      throw invalidArgument("research.lanes must be distinct, known and non-empty", "research.lanes");
    }
    request.research = create(pbRuns.ResearchOptionsSchema, { depth: research.depth, lanes });
  } else if (options.research !== undefined) {
    throw invalidArgument("research options are only for research runs", "research");
  }
  if (options.role !== undefined) {
    if (!ROLE.test(options.role)) throw invalidArgument("role must be 1-64 characters of [A-Za-z0-9._:-]", "role");
    request.role = options.role;
  }
  const maxTurns = options.maxTurns ?? 0;
  const limit = info.limits.maxTurns || 100;
  if (typeof maxTurns !== "number" || !Number.isInteger(maxTurns) || maxTurns < 0 || maxTurns > limit) {
    throw new InvalidArgumentError(`maxTurns must be an integer from 0 to ${limit}`, {
      reason: "MAX_TURNS_OUT_OF_RANGE",
      metadata: { field: "max_turns", limit: String(limit) },
    });
  }
  request.maxTurns = maxTurns;
  if (options.sessionId !== undefined) request.sessionId = checkId(options.sessionId, "session_id");
  if (options.endUserId !== undefined) {
    if (!END_USER.test(options.endUserId)) throw invalidArgument("endUserId must be 1-128 characters of [A-Za-z0-9._:@+-]", "end_user_id");
    request.endUserId = options.endUserId;
  }
  if (options.planAction !== undefined) {
    // An older worker would ignore the field and start an ordinary run.
    requireCapability(info, CAP_PLANS_CONTINUE, "a plan action");
    const action = options.planAction;
    request.planAction = create(pbRuns.PlanActionSchema, {
      sourceRunId: checkId(action.sourceRunId, "plan_action.source_run_id"),
      revision: BigInt(checkCount(action.revision, "plan_action.revision", Number.MAX_SAFE_INTEGER)),
      kind: enumValue(pbRuns.PlanActionKind, action.kind, "plan_action.kind"),
    });
  }
  const traceparent = options.traceparent ?? trace?.traceparent;
  const tracestate = options.traceparent !== undefined ? options.tracestate : trace?.tracestate;
  if (traceparent !== undefined) {
    checkTraceContext(traceparent, tracestate);
    request.traceContext = create(pbRuns.TraceContextSchema, { traceparent, tracestate: tracestate ?? "" });
  }
  return request;
}

const STATUS_NAMES = new Set<string>(["QUEUED", "RUNNING", "WAITING_FOR_INPUT", "CANCELLING", "SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED", "OUTCOME_UNKNOWN"]);

export function buildListRuns(info: m.ServerInfo, statuses: readonly m.RunStatus[], pageSize: number, pageToken: string): ListRunsRequest {
  for (const status of statuses) {
    if (!STATUS_NAMES.has(status)) {
      const given = typeof status === "string" ? JSON.stringify((status as string).slice(0, 40)) : typeof status;
      throw invalidArgument(`statuses must be one of ${[...STATUS_NAMES].join(", ")}, not ${given}`, "statuses");
    }
  }
  const wanted = [...new Set(statuses)].map((s) => enumValue(pbRuns.RunStatus, s, "statuses")).sort((a, b) => a - b);
  const cap = info.limits.maxListStatusFilters;
  if (cap > 0 && wanted.length > cap) {
    throw new InvalidArgumentError(`at most ${cap} status filters are accepted`, {
      reason: "STATUS_FILTER_TOO_LARGE",
      metadata: { field: "statuses", limit: String(cap) },
    });
  }
  checkCount(pageSize, "page_size", 1_000_000);
  if (typeof pageToken !== "string" || pageToken.length > 4096) throw invalidArgument("pageToken must be a string of at most 4096 characters", "page_token");
  return create(ListRunsRequestSchema, { statuses: wanted, pageSize, pageToken });
}

export function buildGetRun(runId: string): GetRunRequest {
  return create(GetRunRequestSchema, { runId: checkId(runId, "run_id") });
}

export function buildCancelRun(runId: string): CancelRunRequest {
  return create(CancelRunRequestSchema, { runId: checkId(runId, "run_id") });
}

export function buildWatchRun(runId: string, afterSequence: number): WatchRunRequest {
  return create(WatchRunRequestSchema, { runId, afterSequence: BigInt(afterSequence) });
}

export function buildDownload(artifactId: string): DownloadArtifactRequest {
  return create(DownloadArtifactRequestSchema, { artifactId: checkId(artifactId, "artifact_id") });
}

export function buildRespond(runId: string, interactionId: string, answer: m.InteractionAnswer): RespondInteractionRequest {
  const request = create(RespondInteractionRequestSchema, {
    runId: checkId(runId, "run_id"),
    interactionId: checkId(interactionId, "interaction_id"),
  });
  // Checked at run time too: JavaScript callers can pass anything.
  const given = answer as unknown as Record<string, unknown> | null | undefined;
  if (given?.["kind"] === "prompt" && typeof given["choice"] === "string") {
    request.answer = { case: "prompt", value: create(PromptAnswerSchema, { choice: given["choice"] }) };
  } else if (given?.["kind"] === "approval" && typeof given["binding"] === "string") {
    const decision = given["decision"] === "APPROVE" ? PbApprovalDecision.APPROVE : given["decision"] === "DENY" ? PbApprovalDecision.DENY : null;
    if (decision === null) throw invalidArgument("answer.decision must be APPROVE or DENY", "answer.decision");
    request.answer = { case: "approval", value: create(ApprovalAnswerSchema, { binding: given["binding"], decision }) };
  } else {
    throw invalidArgument("answer must be { kind: 'prompt', choice } or { kind: 'approval', binding, decision }", "answer");
  }
  return request;
}

export function buildManifest(info: m.ServerInfo, size: number, sha256: string, mediaType: string, displayName: string | undefined): ArtifactManifest {
  requireCapability(info, CAP_ARTIFACTS, "an artifact upload");
  const cap = info.limits.maxArtifactBytes;
  if (cap > 0 && size > cap) {
    throw new ResourceExhaustedError(`the artifact is ${size} bytes; the worker accepts ${cap}`, {
      reason: "ARTIFACT_TOO_LARGE",
      metadata: { limit: String(cap) },
    });
  }
  if (typeof mediaType !== "string" || mediaType.length > 127 || !MEDIA_TYPE.test(mediaType)) {
    throw invalidArgument("mediaType must look like type/subtype (at most 127 characters)", "media_type");
  }
  if (
    displayName !== undefined &&
    (typeof displayName !== "string" || displayName.length === 0 || Buffer.byteLength(displayName) > 255 || /[/\\\0]/.test(displayName))
  ) {
    throw invalidArgument("displayName must be 1-255 bytes with no path separators", "display_name");
  }
  if (!isPin(sha256)) throw invalidArgument("sha256 must be 64 lower-case hex characters", "sha256");
  return create(ArtifactManifestSchema, { mediaType, sizeBytes: BigInt(size), sha256, displayName: displayName ?? "" });
}
