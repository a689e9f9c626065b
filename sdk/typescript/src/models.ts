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

export type RunMode = "UNSPECIFIED" | "EXECUTE" | "PLAN" | "RESEARCH";
export type DeploymentMode = "UNSPECIFIED" | "SHARED_DAEMON" | "SIDECAR";
export type EvidenceLane = "UNSPECIFIED" | "REPOSITORY" | "WEB" | "MCP";
export type PlanActionKind = "UNSPECIFIED" | "REVISE" | "EXECUTE_DIRECT" | "EXECUTE_GOAL";
export type PlanStatus = "UNSPECIFIED" | "DRAFT" | "SUPERSEDED" | "EXECUTED" | "ABANDONED";
export type ActionClass =
  | "UNSPECIFIED"
  | "READ"
  | "WRITE"
  | "EXECUTE"
  | "NETWORK"
  | "ADMINISTRATION"
  | "DELEGATION"
  | "LOCAL_STATE";
export type InteractionOutcome = "UNSPECIFIED" | "ANSWERED" | "APPROVED" | "DENIED" | "CANCELLED" | "INTERRUPTED";
export type ToolActivityPhase = "UNSPECIFIED" | "STARTED" | "COMPLETED" | "FAILED";
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

export interface PlanResult {
  readonly planId: string;
  readonly revision: number;
  readonly status: PlanStatus;
}
export interface Citation {
  readonly lane: EvidenceLane;
  readonly label: string;
  readonly url: string;
}
export interface ResearchResult {
  readonly report: string;
  readonly citations: readonly Citation[];
}
export interface RunFailure {
  readonly code: string;
  readonly message: string;
}
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

export interface StatusChanged {
  readonly kind: "status_changed";
  readonly previousStatus: RunStatus;
  readonly status: RunStatus;
}
export interface OutputDelta {
  readonly kind: "output_delta";
  readonly text: string;
}
export interface InteractionRequested {
  readonly kind: "interaction_requested";
  readonly interaction: Interaction;
}
export interface InteractionResolved {
  readonly kind: "interaction_resolved";
  readonly interactionId: string;
  readonly outcome: InteractionOutcome;
  readonly choice: string;
}
export interface ToolActivity {
  readonly kind: "tool_activity";
  readonly activityId: string;
  readonly actionClass: ActionClass;
  readonly displayCategory: string;
  readonly phase: ToolActivityPhase;
}
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
export type InputPart = string | TextPart | ArtifactPart;

export interface ResearchOptions {
  /** 1 to 5. */
  readonly depth: number;
  readonly lanes: readonly EvidenceLane[];
}
export interface PlanAction {
  readonly sourceRunId: string;
  readonly revision: number;
  readonly kind: PlanActionKind;
}
export interface PromptAnswer {
  readonly kind: "prompt";
  /** Exactly one of the displayed choices. */
  readonly choice: string;
}
export interface ApprovalAnswer {
  readonly kind: "approval";
  /** The approval's `binding`, echoed. */
  readonly binding: string;
  readonly decision: ApprovalDecision;
}
export type InteractionAnswer = PromptAnswer | ApprovalAnswer;

/** One page of `runs.list`. */
export interface RunPage {
  readonly runs: readonly Run[];
  /** Empty on the last page; pass it as `pageToken` to resume. */
  readonly nextPageToken: string;
}

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
