// SDK models to the protocol's plain JSON (conformance/docs/client-protocol.md).
import { createHash } from "node:crypto";
import type { Artifact, DownloadedArtifact, Interaction, Run, RunEvent, ServerInfo } from "colossus-sdk";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function interactionView(i: Interaction | null): Json {
  if (i === null) return null;
  const r = i.request;
  if (r.kind === "prompt") {
    return { interaction_id: i.interactionId, kind: "prompt", question: r.question, choices: [...r.choices] };
  }
  return {
    interaction_id: i.interactionId,
    kind: "approval",
    action_class: r.actionClass,
    display_category: r.displayCategory,
    origin: r.origin,
    binding: r.binding,
  };
}

export function runView(r: Run): Json {
  const result =
    r.result === null
      ? null
      : {
          output_text: r.result.outputText,
          failure_code: r.result.failure?.code ?? null,
          plan: r.result.plan === null ? null : { plan_id: r.result.plan.planId, revision: r.result.plan.revision, status: r.result.plan.status },
        };
  return {
    run_id: r.runId,
    session_id: r.sessionId,
    mode: r.mode,
    role: r.role,
    status: r.status,
    last_sequence: r.lastSequence,
    idempotency_key: r.idempotencyKey,
    end_user_id: r.endUserId,
    max_turns: r.maxTurns,
    pending_interaction: interactionView(r.pendingInteraction),
    result,
  };
}

export function eventView(e: RunEvent): { [key: string]: Json } {
  const base = { run_id: e.runId, sequence: e.sequence };
  const p = e.payload;
  switch (p.kind) {
    case "status_changed":
      return { ...base, kind: "status_changed", previous_status: p.previousStatus, status: p.status };
    case "output_delta":
      return { ...base, kind: "output_delta", text: p.text };
    case "interaction_requested":
      return { ...base, kind: "interaction_requested", interaction: interactionView(p.interaction) };
    case "interaction_resolved":
      return { ...base, kind: "interaction_resolved", interaction_id: p.interactionId, outcome: p.outcome, choice: p.choice };
    case "tool_activity":
      return { ...base, kind: "tool_activity", action_class: p.actionClass, display_category: p.displayCategory, phase: p.phase };
    case "terminated":
      return { ...base, kind: "terminated", terminal_status: p.status };
    default:
      return { ...base, kind: "unknown" };
  }
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

export function serverInfoView(s: ServerInfo): Json {
  const limits: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(s.limits)) {
    if (key === "handshakeTimeoutSeconds") limits["handshake_timeout"] = value as number;
    else if (key === "maxConnectionAgeSeconds") limits["max_connection_age"] = value as number;
    else if (typeof value === "object" && value !== null) {
      const bucket = value as { refillPerSecond: number; burst: number };
      limits[snake(key)] = { refill_per_second: bucket.refillPerSecond, burst: bucket.burst };
    } else limits[snake(key)] = value as number;
  }
  return {
    instance_id: s.instanceId,
    api_package: s.apiPackage,
    api_version: s.apiVersion,
    api_major: s.apiMajor,
    deployment_mode: s.deploymentMode,
    capabilities: [...s.capabilities].sort(),
    limits,
  };
}

export function artifactView(a: Artifact): Json {
  return { artifact_id: a.artifactId, media_type: a.mediaType, size_bytes: a.sizeBytes, sha256: a.sha256, display_name: a.displayName };
}

export function downloadedView(d: DownloadedArtifact): Json {
  return { artifact: artifactView(d.artifact), size: d.data.length, sha256: createHash("sha256").update(d.data).digest("hex") };
}
