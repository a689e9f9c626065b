/**
 * The one boundary between generated messages and public models. uint64 values become
 * numbers here and are refused when they do not fit exactly.
 */
import { timestampDate, type Timestamp, type Duration } from "@bufbuild/protobuf/wkt";
import * as pbArtifacts from "./gen/colossus/api/v1alpha1/artifacts_pb.js";
import * as pbRuns from "./gen/colossus/api/v1alpha1/runs_pb.js";
import * as pbSystem from "./gen/colossus/api/v1alpha1/system_pb.js";
import { ProtocolViolationError } from "./errors.js";
import type * as m from "./models.js";

// The generated enum tables map numbers to exactly the names of T.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
function name<T extends string>(table: Record<string | number, string | number>, value: number): T {
  const found = table[value];
  return (typeof found === "string" ? found : "UNSPECIFIED") as T;
}

/** A uint64 as a number; larger than 2^53 is a protocol violation, never a silent rounding. */
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function safeNumber(value: bigint, field: string): number {
  if (value > MAX_SAFE) {
    throw new ProtocolViolationError(`${field} is larger than this SDK can represent exactly`, {
      reason: "VALUE_OUT_OF_RANGE",
      metadata: { field },
    });
  }
  return Number(value);
}

function date(value: Timestamp | undefined): Date | null {
  return value === undefined ? null : timestampDate(value);
}

/** Whole microseconds since the epoch (exact: a number holds them until the year 2255). */
function micros(value: Timestamp | undefined): number | null {
  return value === undefined ? null : Number(value.seconds) * 1_000_000 + Math.floor(value.nanos / 1_000);
}

function seconds(value: Duration | undefined): number {
  return value === undefined ? 0 : Number(value.seconds) + value.nanos / 1e9;
}

export const runStatus = (v: pbRuns.RunStatus): m.RunStatus => name(pbRuns.RunStatus, v);
export const actionClass = (v: pbRuns.ActionClass): m.ActionClass => name(pbRuns.ActionClass, v);

function bucket(b: pbSystem.TokenBucket | undefined): m.TokenBucket {
  return Object.freeze({ refillPerSecond: b?.refillPerSecond ?? 0, burst: b?.burst ?? 0 });
}

function limits(l: pbSystem.Limits | undefined): m.Limits {
  const x = l ?? ({} as Partial<pbSystem.Limits>);
  const n = (v: bigint | undefined, field: string): number => safeNumber(v ?? 0n, field);
  return Object.freeze({
    maxActiveRuns: x.maxActiveRuns ?? 0,
    maxActiveRunsPerApplication: x.maxActiveRunsPerApplication ?? 0,
    createRate: bucket(x.createRate),
    createRatePerApplication: bucket(x.createRatePerApplication),
    maxWatches: x.maxWatches ?? 0,
    maxWatchesPerApplication: x.maxWatchesPerApplication ?? 0,
    maxConcurrentListRuns: x.maxConcurrentListRuns ?? 0,
    maxConcurrentListRunsPerApplication: x.maxConcurrentListRunsPerApplication ?? 0,
    maxConnections: x.maxConnections ?? 0,
    maxConcurrentStreamsPerConnection: x.maxConcurrentStreamsPerConnection ?? 0,
    maxRequestBytes: n(x.maxRequestBytes, "limits.max_request_bytes"),
    maxResponseBytes: n(x.maxResponseBytes, "limits.max_response_bytes"),
    maxHeaderBytes: n(x.maxHeaderBytes, "limits.max_header_bytes"),
    maxEventsPerRun: x.maxEventsPerRun ?? 0,
    reservedLifecycleEvents: x.reservedLifecycleEvents ?? 0,
    maxInputParts: x.maxInputParts ?? 0,
    maxInputBytes: n(x.maxInputBytes, "limits.max_input_bytes"),
    maxTurns: x.maxTurns ?? 0,
    defaultMaxTurns: x.defaultMaxTurns ?? 0,
    maxListPageSize: x.maxListPageSize ?? 0,
    maxListStatusFilters: x.maxListStatusFilters ?? 0,
    maxArtifactBytes: n(x.maxArtifactBytes, "limits.max_artifact_bytes"),
    maxArtifactChunkBytes: x.maxArtifactChunkBytes ?? 0,
    handshakeTimeoutSeconds: seconds(x.handshakeTimeout),
    maxConnectionAgeSeconds: seconds(x.maxConnectionAge),
  });
}

export function serverInfo(s: pbSystem.ServerInfo | undefined): m.ServerInfo {
  if (s === undefined) {
    throw new ProtocolViolationError("GetServerInfo returned no server_info", { reason: "RESPONSE_MALFORMED" });
  }
  return Object.freeze({
    instanceId: s.instanceId,
    apiPackage: s.apiPackage,
    apiVersion: s.apiVersion,
    apiMajor: s.apiMajor,
    deploymentMode: name<m.DeploymentMode>(pbSystem.DeploymentMode, s.deploymentMode),
    capabilities: new Set(s.capabilities),
    limits: limits(s.limits),
    serverVersion: s.serverVersion,
  });
}

export function interaction(i: pbRuns.Interaction): m.Interaction {
  let request: m.Prompt | m.Approval;
  if (i.kind.case === "approval") {
    const a = i.kind.value;
    request = Object.freeze({
      kind: "approval",
      actionClass: actionClass(a.actionClass),
      binding: a.binding,
      displayCategory: a.target.case === "displayCategory" ? a.target.value : null,
      origin: a.target.case === "origin" ? a.target.value : null,
    });
  } else {
    const p = i.kind.case === "prompt" ? i.kind.value : undefined;
    request = Object.freeze({ kind: "prompt", question: p?.question ?? "", choices: Object.freeze([...(p?.choices ?? [])]) });
  }
  return Object.freeze({ interactionId: i.interactionId, request, createTime: date(i.createTime) });
}

export function runResult(r: pbRuns.RunResult | undefined): m.RunResult | null {
  if (r === undefined) return null;
  return Object.freeze({
    outputText: r.outputText,
    plan:
      r.plan === undefined
        ? null
        : Object.freeze({
            planId: r.plan.planId,
            revision: safeNumber(r.plan.revision, "result.plan.revision"),
            status: name<m.PlanStatus>(pbRuns.PlanStatus, r.plan.status),
          }),
    research:
      r.research === undefined
        ? null
        : Object.freeze({
            report: r.research.report,
            citations: Object.freeze(
              r.research.citations.map((c) =>
                Object.freeze({ lane: name<m.EvidenceLane>(pbRuns.EvidenceLane, c.lane), label: c.label, url: c.url }),
              ),
            ),
          }),
    failure: r.failure === undefined ? null : Object.freeze({ code: r.failure.code, message: r.failure.message }),
  });
}

export function run(r: pbRuns.Run | undefined): m.Run {
  if (r === undefined) {
    throw new ProtocolViolationError("the response carried no run", { reason: "RESPONSE_MALFORMED" });
  }
  return Object.freeze({
    runId: r.runId,
    sessionId: r.sessionId,
    mode: name<m.RunMode>(pbRuns.RunMode, r.mode),
    role: r.role,
    status: runStatus(r.status),
    lastSequence: safeNumber(r.lastSequence, "run.last_sequence"),
    createTime: date(r.createTime),
    updateTime: date(r.updateTime),
    idempotencyKey: r.idempotencyKey,
    endUserId: r.endUserId ?? null,
    maxTurns: r.maxTurns,
    pendingInteraction: r.pendingInteraction === undefined ? null : interaction(r.pendingInteraction),
    result: runResult(r.result),
  });
}

export function payload(p: pbRuns.RunEvent["payload"]): m.RunEventPayload {
  switch (p.case) {
    case "statusChanged":
      return { kind: "status_changed", previousStatus: runStatus(p.value.previousStatus), status: runStatus(p.value.status) };
    case "outputDelta":
      return { kind: "output_delta", text: p.value.text };
    case "interactionRequested":
      if (p.value.interaction === undefined) {
        throw new ProtocolViolationError("interaction_requested carried no interaction", { reason: "RESPONSE_MALFORMED" });
      }
      return { kind: "interaction_requested", interaction: interaction(p.value.interaction) };
    case "interactionResolved":
      return {
        kind: "interaction_resolved",
        interactionId: p.value.interactionId,
        outcome: name<m.InteractionOutcome>(pbRuns.InteractionOutcome, p.value.outcome),
        choice: p.value.choice,
      };
    case "toolActivity":
      return {
        kind: "tool_activity",
        activityId: p.value.activityId,
        actionClass: actionClass(p.value.actionClass),
        displayCategory: p.value.displayCategory,
        phase: name<m.ToolActivityPhase>(pbRuns.ToolActivityPhase, p.value.phase),
      };
    case "terminated":
      return { kind: "terminated", status: runStatus(p.value.status), result: runResult(p.value.result) };
    default:
      return { kind: "unknown" };
  }
}

export function runEvent(e: pbRuns.RunEvent, sequence: number): m.RunEvent {
  return { runId: e.runId, sequence, eventTime: date(e.eventTime), eventTimeUs: micros(e.eventTime), payload: payload(e.payload) };
}

export function artifact(a: pbArtifacts.Artifact | undefined): m.Artifact {
  if (a === undefined) {
    throw new ProtocolViolationError("the response carried no artifact", { reason: "RESPONSE_MALFORMED" });
  }
  return Object.freeze({
    artifactId: a.artifactId,
    mediaType: a.mediaType,
    sizeBytes: safeNumber(a.sizeBytes, "artifact.size_bytes"),
    sha256: a.sha256,
    displayName: a.displayName,
    createTime: date(a.createTime),
  });
}
