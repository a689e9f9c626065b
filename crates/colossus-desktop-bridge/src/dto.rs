//! What a renderer receives: released run state only, field by field (B6).
//!
//! Every DTO is built here from the SDK's public model by naming each field it keeps, so a
//! field added to the SDK never crosses by accident. Kept out on purpose: a run's
//! idempotency key, role and end-user ID; an approval's one-use binding; tool names,
//! arguments and activity details beyond the public action class and display category; a
//! failure's message (worker text); the target's endpoint, instance ID, pin, certificate,
//! descriptor or state paths, credentials and grant. Sequences and revisions are decimal
//! strings (JavaScript numbers stop being exact at 2^53); times are milliseconds since
//! the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

use colossus_sdk::model::{
    Citation, EventPayload, Interaction, InteractionKind, PlanResult, ResearchResult, Run,
    RunEvent, RunPage, RunResult,
};
use serde::Serialize;

use crate::{TargetHealth, TargetId, TargetKind};

/// A target as Fleet and Work show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetDto {
    /// The opaque target ID.
    pub target_id: TargetId,
    /// How it is placed.
    pub kind: TargetKind,
    /// The native-sourced label.
    pub label: String,
    /// Its sanitized health.
    pub health: TargetHealth,
    /// Whether it is the Work selection.
    pub selected: bool,
}

/// A run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDto {
    /// The target the run is bound to.
    pub target_id: String,
    /// The run's ID.
    pub run_id: String,
    /// Its session (for the terminal window's fixed resume selection).
    pub session_id: String,
    /// `execute`, `plan`, `research` (or `unknown` from a newer worker).
    pub mode: String,
    /// `queued`, `running`, `waiting_for_input`, ... (lower case).
    pub status: String,
    /// The last durable sequence, as a decimal string.
    pub last_sequence: String,
    /// When it was created.
    pub create_time_ms: u64,
    /// When it last changed.
    pub update_time_ms: u64,
    /// Its turn limit (0: the worker's default).
    pub max_turns: u32,
    /// The interaction it waits for, if any.
    pub pending_interaction: Option<InteractionDto>,
    /// Its released result, once terminal.
    pub result: Option<RunResultDto>,
}

/// An interaction the run waits for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InteractionDto {
    /// The interaction's ID.
    pub interaction_id: String,
    /// What it asks.
    pub request: InteractionRequestDto,
    /// When it was asked.
    pub create_time_ms: u64,
}

/// What an interaction asks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InteractionRequestDto {
    /// A question with choices; the answer echoes one choice exactly.
    Prompt {
        /// The question.
        question: String,
        /// The choices.
        choices: Vec<String>,
    },
    /// An approval. Its one-use binding stays native.
    Approval {
        /// The public action class (`read`, `write`, `execute`, `network`, ...).
        action_class: String,
        /// A bounded display category.
        display_category: Option<String>,
        /// An HTTP(S) origin, for network actions.
        origin: Option<String>,
    },
    /// A kind newer than this bridge; it cannot be answered here.
    Unknown,
}

/// A terminal run's released result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResultDto {
    /// The released output text.
    pub output_text: String,
    /// A Plan run's canonical Plan, as typed fields.
    pub plan: Option<PlanDto>,
    /// A Research run's released report.
    pub research: Option<ResearchDto>,
    /// A failed run's failure code (its message is worker text and stays native).
    pub failure_code: Option<String>,
}

/// The canonical Plan of a Plan run, never reconstructed from text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanDto {
    /// The Plan's ID, for display and the terminal window's fixed `/plan use`; a plan
    /// action names the source run and revision instead.
    pub plan_id: String,
    /// The revision, as a decimal string.
    pub revision: String,
    /// `draft`, `superseded`, `executed`, `abandoned`.
    pub status: String,
}

/// A released research report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResearchDto {
    /// The cited report.
    pub report: String,
    /// Its citations.
    pub citations: Vec<CitationDto>,
}

/// One citation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CitationDto {
    /// `repository`, `web` or `mcp`.
    pub lane: String,
    /// What it is called.
    pub label: String,
    /// Where it is, as released by the runtime.
    pub url: String,
}

/// A page of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPageDto {
    /// The runs, newest first.
    pub runs: Vec<RunDto>,
    /// Continue with this token while present.
    pub next_page_token: Option<String>,
}

/// One watch event other than text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventDto {
    /// The run's status changed.
    StatusChanged {
        /// Before.
        previous: String,
        /// After.
        status: String,
    },
    /// The run asks something.
    InteractionRequested {
        /// The interaction.
        interaction: InteractionDto,
    },
    /// An interaction was resolved.
    InteractionResolved {
        /// Which.
        interaction_id: String,
        /// `answered`, `approved`, `denied`, `cancelled`, `interrupted`.
        outcome: String,
    },
    /// Tool activity, as the public taxonomy shows it (no tool name, no arguments).
    ToolActivity {
        /// The activity's ID.
        activity_id: String,
        /// The public action class.
        action_class: String,
        /// A bounded display category.
        display_category: String,
        /// `started`, `completed`, `failed`.
        phase: String,
    },
    /// The run ended.
    Terminal {
        /// Its final status.
        status: String,
        /// Its released result.
        result: Option<RunResultDto>,
    },
    /// An event newer than this bridge.
    Unknown,
}

pub(crate) fn token(text: &str) -> String {
    text.to_ascii_lowercase()
}

pub(crate) fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl RunDto {
    pub(crate) fn new(target: &TargetId, run: &Run) -> RunDto {
        RunDto {
            target_id: target.as_str().to_owned(),
            run_id: run.run_id.clone(),
            session_id: run.session_id.clone(),
            mode: token(run.mode.as_str()),
            status: token(run.status.as_str()),
            last_sequence: run.last_sequence.to_string(),
            create_time_ms: millis(run.create_time),
            update_time_ms: millis(run.update_time),
            max_turns: run.max_turns,
            pending_interaction: run.pending_interaction.as_ref().map(InteractionDto::new),
            result: run.result.as_ref().map(RunResultDto::new),
        }
    }
}

impl InteractionDto {
    pub(crate) fn new(interaction: &Interaction) -> InteractionDto {
        let request = match &interaction.kind {
            InteractionKind::Prompt(p) => InteractionRequestDto::Prompt {
                question: p.question.clone(),
                choices: p.choices.clone(),
            },
            InteractionKind::Approval(a) => InteractionRequestDto::Approval {
                action_class: token(a.action_class.as_str()),
                display_category: a.display_category.clone(),
                origin: a.origin.clone(),
            },
            _ => InteractionRequestDto::Unknown,
        };
        InteractionDto {
            interaction_id: interaction.interaction_id.clone(),
            request,
            create_time_ms: millis(interaction.create_time),
        }
    }
}

impl RunResultDto {
    pub(crate) fn new(result: &RunResult) -> RunResultDto {
        RunResultDto {
            output_text: result.output_text.clone(),
            plan: result.plan.as_ref().map(PlanDto::new),
            research: result.research.as_ref().map(ResearchDto::new),
            failure_code: result.failure.as_ref().map(|f| f.code.clone()),
        }
    }
}

impl PlanDto {
    fn new(plan: &PlanResult) -> PlanDto {
        PlanDto {
            plan_id: plan.plan_id.clone(),
            revision: plan.revision.to_string(),
            status: token(plan.status.as_str()),
        }
    }
}

impl ResearchDto {
    fn new(research: &ResearchResult) -> ResearchDto {
        ResearchDto {
            report: research.report.clone(),
            citations: research.citations.iter().map(CitationDto::new).collect(),
        }
    }
}

impl CitationDto {
    fn new(c: &Citation) -> CitationDto {
        CitationDto {
            lane: token(c.lane.as_str()),
            label: c.label.clone(),
            url: c.url.clone(),
        }
    }
}

impl RunPageDto {
    pub(crate) fn new(target: &TargetId, page: &RunPage) -> RunPageDto {
        RunPageDto {
            runs: page.runs.iter().map(|r| RunDto::new(target, r)).collect(),
            next_page_token: page.next_page_token.clone(),
        }
    }
}

impl EventDto {
    /// The event's DTO; `None` for a text delta (those travel coalesced as text frames).
    pub(crate) fn new(event: &RunEvent) -> Option<EventDto> {
        if event.output_text().is_some() {
            return None;
        }
        Some(match &event.payload {
            EventPayload::StatusChanged {
                previous_status,
                status,
            } => EventDto::StatusChanged {
                previous: token(previous_status.as_str()),
                status: token(status.as_str()),
            },
            EventPayload::InteractionRequested(i) => EventDto::InteractionRequested {
                interaction: InteractionDto::new(i),
            },
            EventPayload::InteractionResolved {
                interaction_id,
                outcome,
                ..
            } => EventDto::InteractionResolved {
                interaction_id: interaction_id.clone(),
                outcome: token(outcome.as_str()),
            },
            EventPayload::ToolActivity {
                activity_id,
                action_class,
                display_category,
                phase,
                ..
            } => EventDto::ToolActivity {
                activity_id: activity_id.clone(),
                action_class: token(action_class.as_str()),
                display_category: display_category.clone(),
                phase: token(phase.as_str()),
            },
            EventPayload::RunTerminated { status, result } => EventDto::Terminal {
                status: token(status.as_str()),
                result: result.as_ref().map(RunResultDto::new),
            },
            _ => EventDto::Unknown,
        })
    }
}
