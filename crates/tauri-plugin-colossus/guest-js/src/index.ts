/**
 * Typed guest bindings for tauri-plugin-colossus. Each function is one product command of
 * the plugin (`plugin:colossus|<name>`), taking the closed input shape the native side
 * accepts and resolving to its sanitized DTO; a refusal rejects with a {@link BridgeError}
 * (data, never a message). Sequences and revisions are decimal strings: JavaScript numbers
 * stop being exact at 2^53.
 */
import { Channel, invoke } from "@tauri-apps/api/core";

/** The plugin's commands, in the native product order. */
export const COMMANDS = [
  "create_run",
  "get_run",
  "list_runs",
  "watch_run",
  "cancel_run",
  "respond_interaction",
  "list_targets",
  "desktop_release_channel",
] as const;

/** A failure, as data. */
export interface BridgeError {
  kind: string;
  reason: string | null;
  retryable: boolean;
  retry_after_ms: number | null;
  field: string | null;
}

/** A target's sanitized health. */
export type TargetHealth =
  | { state: "unknown" | "ready" | "closed" }
  | { state: "unavailable" | "failed"; reason: string };

/** A target as Fleet and Work show it. */
export interface Target {
  target_id: string;
  kind: "managed_local" | "external" | "embedded";
  label: string;
  health: TargetHealth;
  selected: boolean;
}

/** What an interaction asks. Approvals carry no binding: it stays native. */
export type InteractionRequest =
  | { kind: "prompt"; question: string; choices: string[] }
  | { kind: "approval"; action_class: string; display_category: string | null; origin: string | null }
  | { kind: "unknown" };

/** An interaction a run waits for. */
export interface Interaction {
  interaction_id: string;
  request: InteractionRequest;
  create_time_ms: number;
}

/** A Plan run's canonical Plan, as typed fields. */
export interface Plan {
  plan_id: string;
  revision: string;
  status: string;
}

/** A terminal run's released result. */
export interface RunResult {
  output_text: string;
  plan: Plan | null;
  research: { report: string; citations: { lane: string; label: string; url: string }[] } | null;
  failure_code: string | null;
}

/** A run. */
export interface Run {
  target_id: string;
  run_id: string;
  session_id: string;
  mode: string;
  status: string;
  last_sequence: string;
  create_time_ms: number;
  update_time_ms: number;
  max_turns: number;
  pending_interaction: Interaction | null;
  result: RunResult | null;
}

/** A page of runs. */
export interface RunPage {
  runs: Run[];
  next_page_token: string | null;
}

/** A composer mode. A plan action names the source run and visible revision, never a Plan ID. */
export type Mode =
  | { kind: "execute" }
  | { kind: "plan" }
  | { kind: "research"; depth: number; lanes: ("repository" | "web" | "mcp")[] }
  | {
      kind: "plan_action";
      source_run_id: string;
      revision: string;
      action: "revise" | "execute_direct" | "execute_goal";
    };

/** One watch event other than text. */
export type RunEvent =
  | { type: "status_changed"; previous: string; status: string }
  | { type: "interaction_requested"; interaction: Interaction }
  | { type: "interaction_resolved"; interaction_id: string; outcome: string }
  | { type: "tool_activity"; activity_id: string; action_class: string; display_category: string; phase: string }
  | { type: "terminal"; status: string; result: RunResult | null }
  | { type: "unknown" };

/** One frame of a watch, in sequence order; `end` is the last. */
export type WatchFrame =
  | { frame: "text"; first_sequence: string; last_sequence: string; text: string }
  | { frame: "event"; sequence: string; event: RunEvent }
  | { frame: "end"; reason: "completed" | "selection_changed" | "failed" | "stopped"; error: BridgeError | null };

const call = <T>(command: (typeof COMMANDS)[number], args?: Record<string, unknown>): Promise<T> =>
  invoke<T>(`plugin:colossus|${command}`, args);

/** Starts a run on the selected Work target. */
export function createRun(input: { target_id: string; text: string; mode: Mode }): Promise<Run> {
  return call("create_run", { input });
}

/** Reads a run created or listed through that target. */
export function getRun(input: { target_id: string; run_id: string }): Promise<Run> {
  return call("get_run", { input });
}

/** One page of the selected target's runs. */
export function listRuns(input: {
  target_id: string;
  statuses?: string[];
  page_size?: number;
  page_token?: string;
}): Promise<RunPage> {
  return call("list_runs", { input });
}

/** Asks the target to cancel a run, once. */
export function cancelRun(input: { target_id: string; run_id: string }): Promise<Run> {
  return call("cancel_run", { input });
}

/** Answers a pending interaction: a prompt with one of its choices, an approval with a decision. */
export function respondInteraction(input: {
  target_id: string;
  run_id: string;
  interaction_id: string;
  answer: { kind: "choice"; choice: string } | { kind: "approval"; decision: "approve" | "deny" };
}): Promise<Run> {
  return call("respond_interaction", { input });
}

/** Every target with its sanitized health. */
export function listTargets(): Promise<Target[]> {
  return call("list_targets");
}

/** The compile-time release channel; no input, no runtime needed. */
export function desktopReleaseChannel(): Promise<
  "development" | "stable" | "developer_preview" | "validation_only"
> {
  return call("desktop_release_channel");
}

/**
 * Watches a run: resolves once the native side bound the watch; `onFrame` then receives
 * every frame in sequence order (the channel reorders by index), the `end` frame last.
 */
export async function watchRun(
  input: { target_id: string; run_id: string; after_sequence?: string },
  onFrame: (frame: WatchFrame) => void,
): Promise<void> {
  const channel = new Channel<WatchFrame>(onFrame);
  await call<null>("watch_run", { input, onFrame: channel });
}
