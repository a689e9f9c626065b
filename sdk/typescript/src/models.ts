/**
 * The public models: plain readonly data and string-literal enumerations. Nothing here is
 * a generated message; `convert.ts` builds these from the wire at one boundary.
 */

/** Where a run is in its life. The last five are terminal. */
export type RunStatus =
  | "UNSPECIFIED"
  | "QUEUED"
  | "RUNNING"
  | "WAITING_FOR_INPUT"
  | "CANCELLING"
  | "SUCCEEDED"
  | "FAILED"
  | "CANCELLED"
  | "INTERRUPTED"
  | "OUTCOME_UNKNOWN";

const TERMINAL: ReadonlySet<RunStatus> = new Set(["SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED", "OUTCOME_UNKNOWN"]);

/** True for the five terminal statuses. */
export function isTerminalStatus(status: RunStatus): boolean {
  return TERMINAL.has(status);
}

/** How a run works: executes the input, drafts a plan, or researches. */
export type RunMode = "UNSPECIFIED" | "EXECUTE" | "PLAN" | "RESEARCH";
/** Where the worker runs: an installed shared daemon, or a private sidecar. */
export type DeploymentMode = "UNSPECIFIED" | "SHARED_DAEMON" | "SIDECAR";
/** A source a research run may draw evidence from. */
export type EvidenceLane = "UNSPECIFIED" | "REPOSITORY" | "WEB" | "MCP";
/** What a plan action does with a drafted plan. */
export type PlanActionKind = "UNSPECIFIED" | "REVISE" | "EXECUTE_DIRECT" | "EXECUTE_GOAL";
/** Where a drafted plan stands. */
export type PlanStatus = "UNSPECIFIED" | "DRAFT" | "SUPERSEDED" | "EXECUTED" | "ABANDONED";
/** The kind of action an approval request asks about. */
export type ActionClass =
  | "UNSPECIFIED"
  | "READ"
  | "WRITE"
  | "EXECUTE"
  | "NETWORK"
  | "ADMINISTRATION"
  | "DELEGATION"
  | "LOCAL_STATE";
/** How an interaction (prompt or approval) ended. */
export type InteractionOutcome = "UNSPECIFIED" | "ANSWERED" | "APPROVED" | "DENIED" | "CANCELLED" | "INTERRUPTED";
/** The phase of a tool call a `tool_activity` event reports. */
export type ToolActivityPhase = "UNSPECIFIED" | "STARTED" | "COMPLETED" | "FAILED";
/** Your answer to an approval request. */
export type ApprovalDecision = "APPROVE" | "DENY";

/** A token bucket: sustained rate and burst. */
export interface TokenBucket {
  readonly refillPerSecond: number;
  readonly burst: number;
}

/** Every limit the worker advertises (sizes in bytes, durations in seconds). */
export interface Limits {
  readonly maxActiveRuns: number;
  readonly maxActiveRunsPerApplication: number;
  readonly createRate: TokenBucket;
  readonly createRatePerApplication: TokenBucket;
  readonly maxWatches: number;
  readonly maxWatchesPerApplication: number;
  readonly maxConcurrentListRuns: number;
  readonly maxConcurrentListRunsPerApplication: number;
  readonly maxConnections: number;
  readonly maxConcurrentStreamsPerConnection: number;
  readonly maxRequestBytes: number;
  readonly maxResponseBytes: number;
  readonly maxHeaderBytes: number;
  readonly maxEventsPerRun: number;
  readonly reservedLifecycleEvents: number;
  readonly maxInputParts: number;
  readonly maxInputBytes: number;
  readonly maxTurns: number;
  readonly defaultMaxTurns: number;
  readonly maxListPageSize: number;
  readonly maxListStatusFilters: number;
  readonly maxArtifactBytes: number;
  readonly maxArtifactChunkBytes: number;
  readonly handshakeTimeoutSeconds: number;
  readonly maxConnectionAgeSeconds: number;
}

/** The verified `GetServerInfo` answer. */
export interface ServerInfo {
  readonly instanceId: string;
  readonly apiPackage: string;
  readonly apiVersion: string;
  readonly apiMajor: number;
  readonly deploymentMode: DeploymentMode;
  readonly capabilities: ReadonlySet<string>;
  readonly limits: Limits;
  readonly serverVersion: string;
}

/** A question with fixed choices; answer with {@link PromptAnswer}. */
export interface Prompt {
  readonly kind: "prompt";
  readonly question: string;
  readonly choices: readonly string[];
}

/** A request to approve one public action class; answer with {@link ApprovalAnswer}. */
export interface Approval {
  readonly kind: "approval";
  readonly actionClass: ActionClass;
  /** A fresh one-use value the answer must echo. */
  readonly binding: string;
  readonly displayCategory: string | null;
  readonly origin: string | null;
}

/** A pending question or approval of a run. */
export interface Interaction {
  readonly interactionId: string;
  /** Switch on `request.kind`. */
  readonly request: Prompt | Approval;
  readonly createTime: Date | null;
}

/** The plan a `PLAN` run produced. */
export interface PlanResult {
  readonly planId: string;
  readonly revision: number;
  readonly status: PlanStatus;
}
/** One source a research result cites. */
export interface Citation {
  readonly lane: EvidenceLane;
  readonly label: string;
  readonly url: string;
}
/** The report and citations of a `RESEARCH` run. */
export interface ResearchResult {
  readonly report: string;
  readonly citations: readonly Citation[];
}
/** Why a run failed: a code and a message. */
export interface RunFailure {
  readonly code: string;
  readonly message: string;
}
/** What an ended run produced. */
export interface RunResult {
  readonly outputText: string;
  readonly plan: PlanResult | null;
  readonly research: ResearchResult | null;
  readonly failure: RunFailure | null;
}

/** A run as the worker last reported it. */
export interface Run {
  readonly runId: string;
  readonly sessionId: string;
  readonly mode: RunMode;
  readonly role: string;
  readonly status: RunStatus;
  /** The sequence of the run's last event: the cursor that proves a watch is complete. */
  readonly lastSequence: number;
  readonly createTime: Date | null;
  readonly updateTime: Date | null;
  readonly idempotencyKey: string;
  readonly endUserId: string | null;
  readonly maxTurns: number;
  readonly pendingInteraction: Interaction | null;
  readonly result: RunResult | null;
}

/** What `runs.create` returns. */
export interface CreateRunResult {
  readonly run: Run;
  /** True when the idempotency key matched an earlier identical request. */
  readonly replayed: boolean;
  /** The key the call used (yours, or the one the SDK generated). */
  readonly idempotencyKey: string;
}

/** Payload of a `status_changed` event: the run's new status. */
export interface StatusChanged {
  readonly kind: "status_changed";
  readonly previousStatus: RunStatus;
  readonly status: RunStatus;
}
/** Payload of an `output_delta` event: the next piece of output text. */
export interface OutputDelta {
  readonly kind: "output_delta";
  readonly text: string;
}
/** Payload of an `interaction_requested` event: the run waits for an answer. */
export interface InteractionRequested {
  readonly kind: "interaction_requested";
  readonly interaction: Interaction;
}
/** Payload of an `interaction_resolved` event: how the interaction ended. */
export interface InteractionResolved {
  readonly kind: "interaction_resolved";
  readonly interactionId: string;
  readonly outcome: InteractionOutcome;
  readonly choice: string;
}
/** Payload of a `tool_activity` event: a tool call started, completed or failed. */
export interface ToolActivity {
  readonly kind: "tool_activity";
  readonly activityId: string;
  readonly actionClass: ActionClass;
  readonly displayCategory: string;
  readonly phase: ToolActivityPhase;
}
/** Payload of the `terminated` event, the last of every run. */
export interface RunTerminated {
  readonly kind: "terminated";
  readonly status: RunStatus;
  readonly result: RunResult | null;
}
/** A payload a newer worker sent that this SDK does not know. */
export interface UnknownPayload {
  readonly kind: "unknown";
}

/** One event payload; `switch (payload.kind)` narrows it. */
export type RunEventPayload =
  | StatusChanged
  | OutputDelta
  | InteractionRequested
  | InteractionResolved
  | ToolActivity
  | RunTerminated
  | UnknownPayload;

/** One event of a run, delivered by `runs.watch` in sequence order, exactly once. */
export interface RunEvent {
  readonly runId: string;
  /** Starts at 1 and has no holes. */
  readonly sequence: number;
  /** When the worker recorded it, as a `Date` (millisecond precision); `null` when unset. */
  readonly eventTime: Date | null;
  /**
   * The same instant in whole microseconds since the Unix epoch, the precision the worker
   * records (a `Date` keeps milliseconds only); `null` when unset.
   */
  readonly eventTimeUs: number | null;
  readonly payload: RunEventPayload;
}

/** A text input part. */
export interface TextPart {
  readonly text: string;
}
/** An uploaded artifact as input (needs `artifacts`; images need `attachments.image_input`). */
export interface ArtifactPart {
  readonly artifactId: string;
  /** Declares the part's type for the capability check, e.g. `image/png`. */
  readonly mediaType?: string;
}
/** One part of a run's input: text, or an uploaded artifact. */
export type InputPart = string | TextPart | ArtifactPart;

/** Options of a research run (`runs.create(input, { research })`). */
export interface ResearchOptions {
  /** 1 to 5. */
  readonly depth: number;
  readonly lanes: readonly EvidenceLane[];
}
/** Continues a drafted plan (`runs.create(input, { planAction })`). */
export interface PlanAction {
  readonly sourceRunId: string;
  readonly revision: number;
  readonly kind: PlanActionKind;
}
/** The answer to a prompt: one of its choices. */
export interface PromptAnswer {
  readonly kind: "prompt";
  /** Exactly one of the displayed choices. */
  readonly choice: string;
}
/** The answer to an approval request, bound to what was shown. */
export interface ApprovalAnswer {
  readonly kind: "approval";
  /** The approval's `binding`, echoed. */
  readonly binding: string;
  readonly decision: ApprovalDecision;
}
/** What `runs.respond` sends: a prompt's or an approval's answer. */
export type InteractionAnswer = PromptAnswer | ApprovalAnswer;

/** One page of `runs.list`. */
export interface RunPage {
  readonly runs: readonly Run[];
  /** Empty on the last page; pass it as `pageToken` to resume. */
  readonly nextPageToken: string;
}

/** A stored artifact: its identity, media type, size and SHA-256. */
export interface Artifact {
  readonly artifactId: string;
  readonly mediaType: string;
  readonly sizeBytes: number;
  /** Lower-case hex SHA-256 of the content. */
  readonly sha256: string;
  readonly displayName: string;
  readonly createTime: Date | null;
}
/** A verified download: `data` matched the declared size and SHA-256. */
export interface DownloadedArtifact {
  readonly artifact: Artifact;
  readonly data: Uint8Array;
}
