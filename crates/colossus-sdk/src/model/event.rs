//! One event of a run's watch: [`RunEvent`] and its [`EventPayload`].

use std::time::SystemTime;

use super::{
    ActionClass, Interaction, InteractionOutcome, RunResult, RunStatus, ToolActivityPhase,
};

/// One event of a run, in sequence order (the first is 1).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    /// The run it belongs to.
    pub run_id: String,
    /// Its position: exactly one more than the previous event's.
    pub sequence: u64,
    /// When it happened.
    pub event_time: SystemTime,
    /// What happened.
    pub payload: EventPayload,
}

impl RunEvent {
    /// An event that happened now.
    pub fn new(run_id: impl Into<String>, sequence: u64, payload: EventPayload) -> Self {
        RunEvent {
            run_id: run_id.into(),
            sequence,
            event_time: SystemTime::now(),
            payload,
        }
    }

    /// Whether this is the run's last event.
    pub fn is_terminal(&self) -> bool {
        matches!(self.payload, EventPayload::RunTerminated { .. })
    }

    /// The text of an output delta, if this is one.
    pub fn output_text(&self) -> Option<&str> {
        match &self.payload {
            EventPayload::OutputDelta { text } => Some(text),
            _ => None,
        }
    }
}

/// What an event reports.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum EventPayload {
    /// A status transition.
    StatusChanged {
        /// The status before.
        previous_status: RunStatus,
        /// The status after.
        status: RunStatus,
    },
    /// A piece of output text.
    OutputDelta {
        /// The text.
        text: String,
    },
    /// The run asks a question (answer with [`Runs::respond`](crate::Runs::respond)).
    InteractionRequested(Interaction),
    /// An interaction ended.
    InteractionResolved {
        /// Which one.
        interaction_id: String,
        /// How.
        outcome: InteractionOutcome,
        /// The choice of an answered prompt.
        choice: String,
    },
    /// A tool's progress, in public terms only.
    ToolActivity {
        /// The activity's ID (the same across its phases).
        activity_id: String,
        /// The class of the action.
        action_class: ActionClass,
        /// Its display category.
        display_category: String,
        /// Its phase.
        phase: ToolActivityPhase,
    },
    /// The run's last event: its terminal status and result.
    RunTerminated {
        /// The terminal status.
        status: RunStatus,
        /// The result.
        result: Option<RunResult>,
    },
    /// A payload kind newer than this SDK.
    Unknown,
}
