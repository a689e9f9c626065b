//! What a renderer may send: closed shapes. Unknown fields are refused when the input is
//! decoded, every string is bounded and has a grammar, and numbers beyond 2^53 cross as
//! decimal strings (B7). A renderer never supplies an idempotency key, a role, a tool, a
//! session to adopt, a Plan ID or an approval binding.

use std::collections::HashSet;

use colossus_sdk::model::{ApprovalDecision, EvidenceLane, PlanActionKind, RunStatus};
use serde::Deserialize;

use crate::{BridgeError, TargetId};

/// The longest run text a renderer may send, in bytes.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// The longest run, interaction or source run ID, in bytes.
pub const MAX_ID_BYTES: usize = 128;
/// The longest prompt choice, in bytes.
pub const MAX_CHOICE_BYTES: usize = 256;
/// The longest list continuation token, in bytes.
pub const MAX_PAGE_TOKEN_BYTES: usize = 4096;
/// The largest list page a renderer may ask for.
pub const MAX_PAGE_SIZE: u32 = 100;
/// The deepest Research run.
pub const MAX_RESEARCH_DEPTH: u8 = 5;

/// `create_run`'s input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateRunInput {
    /// The Work target.
    pub target_id: String,
    /// The composer's text (1 to 256 KiB).
    pub text: String,
    /// The run mode.
    pub mode: ModeInput,
}

/// A composer mode.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModeInput {
    /// An ordinary run.
    Execute,
    /// Plan Mode: create one new durable Draft.
    Plan,
    /// A Research run (Managed Local and Embedded targets only).
    Research {
        /// 1 to 5.
        depth: u8,
        /// A unique, non-empty set of lanes.
        lanes: Vec<LaneInput>,
    },
    /// Act on a Draft produced by an earlier Plan run of this target, named by that run's
    /// ID and the exact revision the renderer shows: never by a Plan ID. `revise` is a Plan
    /// run; `execute_direct` and `execute_goal` are Execute runs.
    PlanAction {
        /// The Plan run that produced the Draft (bound to this target).
        source_run_id: String,
        /// The visible revision, as a decimal string.
        revision: String,
        /// What to do with the Draft.
        action: PlanActionInput,
    },
}

/// A Research evidence lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneInput {
    /// The workspace repository.
    Repository,
    /// The web.
    Web,
    /// MCP servers.
    Mcp,
}

/// A plan action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanActionInput {
    /// Revise the Draft (a Plan run).
    Revise,
    /// Execute it directly (an Execute run).
    ExecuteDirect,
    /// Execute it as a bounded goal (an Execute run).
    ExecuteGoal,
}

/// `get_run`'s and `cancel_run`'s input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRef {
    /// The Work target.
    pub target_id: String,
    /// A run created or listed through that target.
    pub run_id: String,
}

/// `watch_run`'s input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchInput {
    /// The Work target.
    pub target_id: String,
    /// A run created or listed through that target.
    pub run_id: String,
    /// Resume after this sequence (decimal string); absent: from the start.
    #[serde(default)]
    pub after_sequence: Option<String>,
}

/// `list_runs`' input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRunsInput {
    /// The Work target.
    pub target_id: String,
    /// Only runs in these statuses (at most 9, unique).
    #[serde(default)]
    pub statuses: Vec<StatusInput>,
    /// At most this many runs (1 to 100; absent: the worker's default).
    #[serde(default)]
    pub page_size: Option<u32>,
    /// A previous page's `next_page_token`.
    #[serde(default)]
    pub page_token: Option<String>,
}

/// A run status filter.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusInput {
    Queued,
    Running,
    WaitingForInput,
    Cancelling,
    Succeeded,
    Failed,
    Cancelled,
    Interrupted,
    OutcomeUnknown,
}

/// `respond_interaction`'s input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RespondInput {
    /// The Work target.
    pub target_id: String,
    /// A run created or listed through that target.
    pub run_id: String,
    /// The pending interaction.
    pub interaction_id: String,
    /// The answer.
    pub answer: AnswerInput,
}

/// An answer. An approval carries only the decision: its one-use binding stays native
/// and is filled in from the pending interaction the target reports.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AnswerInput {
    /// One of a prompt's choices, exactly as shown.
    Choice {
        /// The choice.
        choice: String,
    },
    /// An approval decision.
    Approval {
        /// Approve or deny.
        decision: DecisionInput,
    },
}

/// An approval decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionInput {
    /// Approve.
    Approve,
    /// Deny.
    Deny,
}

pub(crate) fn target_id(text: &str) -> Result<TargetId, BridgeError> {
    TargetId::parse(text).ok_or_else(|| BridgeError::input("target_id"))
}

/// A run, interaction or source run ID: 1-128 bytes of `[A-Za-z0-9._:-]`.
pub(crate) fn opaque_id(text: &str, field: &'static str) -> Result<(), BridgeError> {
    let ok = (1..=MAX_ID_BYTES).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
    ok.then_some(()).ok_or_else(|| BridgeError::input(field))
}

/// A u64 written as 1-20 decimal digits.
pub(crate) fn decimal(text: &str, field: &'static str) -> Result<u64, BridgeError> {
    let ok = (1..=20).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| text.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| BridgeError::input(field))
}

pub(crate) fn text(text: &str) -> Result<(), BridgeError> {
    let ok = !text.trim().is_empty() && text.len() <= MAX_TEXT_BYTES;
    ok.then_some(()).ok_or_else(|| BridgeError::input("text"))
}

pub(crate) fn choice(text: &str) -> Result<(), BridgeError> {
    let ok = (1..=MAX_CHOICE_BYTES).contains(&text.len());
    ok.then_some(())
        .ok_or_else(|| BridgeError::input("answer.choice"))
}

pub(crate) fn research(
    depth: u8,
    lanes: &[LaneInput],
) -> Result<(u32, Vec<EvidenceLane>), BridgeError> {
    if !(1..=MAX_RESEARCH_DEPTH).contains(&depth) {
        return Err(BridgeError::input("mode.depth"));
    }
    let mut seen = HashSet::new();
    if lanes.is_empty() || !lanes.iter().all(|l| seen.insert(*l)) {
        return Err(BridgeError::input("mode.lanes"));
    }
    let lanes = lanes
        .iter()
        .map(|l| match l {
            LaneInput::Repository => EvidenceLane::Repository,
            LaneInput::Web => EvidenceLane::Web,
            LaneInput::Mcp => EvidenceLane::Mcp,
        })
        .collect();
    Ok((u32::from(depth), lanes))
}

pub(crate) fn plan_action(action: PlanActionInput) -> PlanActionKind {
    match action {
        PlanActionInput::Revise => PlanActionKind::Revise,
        PlanActionInput::ExecuteDirect => PlanActionKind::ExecuteDirect,
        PlanActionInput::ExecuteGoal => PlanActionKind::ExecuteGoal,
    }
}

pub(crate) fn statuses(statuses: &[StatusInput]) -> Result<Vec<RunStatus>, BridgeError> {
    let mut seen = HashSet::new();
    if statuses.len() > 9 || !statuses.iter().all(|s| seen.insert(*s)) {
        return Err(BridgeError::input("statuses"));
    }
    Ok(statuses
        .iter()
        .map(|s| match s {
            StatusInput::Queued => RunStatus::Queued,
            StatusInput::Running => RunStatus::Running,
            StatusInput::WaitingForInput => RunStatus::WaitingForInput,
            StatusInput::Cancelling => RunStatus::Cancelling,
            StatusInput::Succeeded => RunStatus::Succeeded,
            StatusInput::Failed => RunStatus::Failed,
            StatusInput::Cancelled => RunStatus::Cancelled,
            StatusInput::Interrupted => RunStatus::Interrupted,
            StatusInput::OutcomeUnknown => RunStatus::OutcomeUnknown,
        })
        .collect())
}

pub(crate) fn page(size: Option<u32>, token: Option<&str>) -> Result<(), BridgeError> {
    if size.is_some_and(|n| !(1..=MAX_PAGE_SIZE).contains(&n)) {
        return Err(BridgeError::input("page_size"));
    }
    if token.is_some_and(|t| {
        t.is_empty() || t.len() > MAX_PAGE_TOKEN_BYTES || !t.bytes().all(|b| b.is_ascii_graphic())
    }) {
        return Err(BridgeError::input("page_token"));
    }
    Ok(())
}

impl From<DecisionInput> for ApprovalDecision {
    fn from(d: DecisionInput) -> ApprovalDecision {
        match d {
            DecisionInput::Approve => ApprovalDecision::Approve,
            DecisionInput::Deny => ApprovalDecision::Deny,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_refused_at_every_level() {
        let base = json!({"target_id": "tgt_x", "text": "hi", "mode": {"kind": "execute"}});
        assert!(serde_json::from_value::<CreateRunInput>(base.clone()).is_ok());
        let mut extra = base.clone();
        extra["idempotency_key"] = json!("k");
        assert!(serde_json::from_value::<CreateRunInput>(extra).is_err());
        let mut nested = base.clone();
        nested["mode"] = json!({"kind": "research", "depth": 2, "lanes": ["web"], "tools": ["x"]});
        assert!(serde_json::from_value::<CreateRunInput>(nested).is_err());
        let mut plan_id = base;
        plan_id["mode"] = json!({"kind": "plan_action", "source_run_id": "run_1",
            "revision": "1", "action": "revise", "plan_id": "plan_1"});
        assert!(serde_json::from_value::<CreateRunInput>(plan_id).is_err());
        let approval = json!({"target_id": "t", "run_id": "r", "interaction_id": "i",
            "answer": {"kind": "approval", "decision": "approve", "binding": "b"}});
        assert!(serde_json::from_value::<RespondInput>(approval).is_err());
    }

    #[test]
    fn research_needs_a_bounded_depth_and_unique_lanes() {
        assert!(research(0, &[LaneInput::Web]).is_err());
        assert!(research(6, &[LaneInput::Web]).is_err());
        assert!(research(2, &[]).is_err());
        assert_eq!(
            research(2, &[LaneInput::Web, LaneInput::Web])
                .unwrap_err()
                .field,
            Some("mode.lanes")
        );
        assert_eq!(
            research(5, &[LaneInput::Mcp, LaneInput::Repository])
                .unwrap()
                .0,
            5
        );
    }

    #[test]
    fn sequences_and_revisions_are_decimal_strings_beyond_2_pow_53() {
        assert_eq!(decimal("18446744073709551615", "x").unwrap(), u64::MAX);
        assert_eq!(decimal("9007199254740993", "x").unwrap(), (1u64 << 53) + 1);
        for bad in ["", "-1", "+1", "1e3", "18446744073709551616", " 1"] {
            assert!(decimal(bad, "x").is_err(), "{bad}");
        }
    }

    #[test]
    fn ids_and_texts_are_bounded() {
        assert!(opaque_id(&"a".repeat(128), "run_id").is_ok());
        assert!(opaque_id(&"a".repeat(129), "run_id").is_err());
        assert!(opaque_id("../etc", "run_id").is_err());
        assert!(text(" \n").is_err());
        assert!(text(&"a".repeat(MAX_TEXT_BYTES + 1)).is_err());
        assert!(page(Some(0), None).is_err());
        assert!(page(Some(101), None).is_err());
        assert!(page(None, Some("a b")).is_err());
    }
}
