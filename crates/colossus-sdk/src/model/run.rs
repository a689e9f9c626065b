//! A run's state: [`Run`], its result and the interactions it asks.

use std::time::SystemTime;

use super::{ActionClass, EvidenceLane, PlanStatus, RunMode, RunStatus};

/// A run's current state.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The run's ID.
    pub run_id: String,
    /// The session it belongs to.
    pub session_id: String,
    /// What it does.
    pub mode: RunMode,
    /// The logical role it runs as.
    pub role: String,
    /// Its lifecycle state.
    pub status: RunStatus,
    /// The sequence of its newest event: the cursor that proves a watch saw everything.
    pub last_sequence: u64,
    /// When it was created.
    pub create_time: SystemTime,
    /// When it last changed.
    pub update_time: SystemTime,
    /// The idempotency key of its create.
    pub idempotency_key: String,
    /// The end user it acts for, when one was given.
    pub end_user_id: Option<String>,
    /// Its turn limit.
    pub max_turns: u32,
    /// The interaction it waits for, if any.
    pub pending_interaction: Option<Interaction>,
    /// Its outcome, once terminal.
    pub result: Option<RunResult>,
}

impl Run {
    /// A run with the given ID and status and every other field empty; for
    /// [`Backend`](crate::backend::Backend) implementations, which fill the rest.
    pub fn new(run_id: impl Into<String>, status: RunStatus) -> Self {
        Run {
            run_id: run_id.into(),
            session_id: String::new(),
            mode: RunMode::Execute,
            role: String::new(),
            status,
            last_sequence: 0,
            create_time: SystemTime::UNIX_EPOCH,
            update_time: SystemTime::UNIX_EPOCH,
            idempotency_key: String::new(),
            end_user_id: None,
            max_turns: 0,
            pending_interaction: None,
            result: None,
        }
    }
}

/// A terminal run's outcome.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunResult {
    /// The whole output text.
    pub output_text: String,
    /// The plan of a PLAN run.
    pub plan: Option<PlanResult>,
    /// The report of a RESEARCH run.
    pub research: Option<ResearchResult>,
    /// Why the run failed.
    pub failure: Option<RunFailure>,
}

impl RunResult {
    /// A result with only output text.
    pub fn text(output_text: impl Into<String>) -> Self {
        RunResult {
            output_text: output_text.into(),
            ..Default::default()
        }
    }
}

/// The plan a PLAN run produced.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanResult {
    /// The plan's ID.
    pub plan_id: String,
    /// Its revision.
    pub revision: u64,
    /// Its state.
    pub status: PlanStatus,
}

/// A RESEARCH run's report.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResearchResult {
    /// The report text.
    pub report: String,
    /// Its sources.
    pub citations: Vec<Citation>,
}

/// One source of a research report.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Citation {
    /// The lane it came from.
    pub lane: EvidenceLane,
    /// Its label.
    pub label: String,
    /// Its URL.
    pub url: String,
}

/// Why a run failed.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFailure {
    /// A machine-readable code.
    pub code: String,
    /// A message for people.
    pub message: String,
}

impl RunFailure {
    /// A failure with a code and message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        RunFailure {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// A durable, one-use question to the application.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct Interaction {
    /// The interaction's ID (answer with [`Runs::respond`](crate::Runs::respond)).
    pub interaction_id: String,
    /// A prompt or an approval.
    pub kind: InteractionKind,
    /// When it was asked.
    pub create_time: SystemTime,
}

impl Interaction {
    /// An interaction asked now.
    pub fn new(interaction_id: impl Into<String>, kind: InteractionKind) -> Self {
        Interaction {
            interaction_id: interaction_id.into(),
            kind,
            create_time: SystemTime::now(),
        }
    }
}

/// What an interaction asks.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InteractionKind {
    /// Pick one of the choices ([`Answer::Prompt`](crate::model::Answer::Prompt)).
    Prompt(Prompt),
    /// Allow or refuse an action ([`Answer::Approval`](crate::model::Answer::Approval)).
    Approval(Approval),
    /// A kind newer than this SDK.
    Unknown,
}

/// A prompt: a question with choices; the answer echoes one choice exactly.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    /// The question.
    pub question: String,
    /// The choices shown.
    pub choices: Vec<String>,
}

impl Prompt {
    /// A prompt with its choices.
    pub fn new(question: impl Into<String>, choices: Vec<String>) -> Self {
        Prompt {
            question: question.into(),
            choices,
        }
    }
}

/// An approval: a public action class and a category or origin; the answer echoes
/// [`binding`](Self::binding).
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approval {
    /// The class of the action.
    pub action_class: ActionClass,
    /// The action's display category, when it has one.
    pub display_category: Option<String>,
    /// The action's origin, when it has one.
    pub origin: Option<String>,
    /// The opaque value an answer must echo.
    pub binding: String,
}

impl Approval {
    /// An approval of an action class with a display category.
    pub fn new(
        action_class: ActionClass,
        display_category: impl Into<String>,
        binding: impl Into<String>,
    ) -> Self {
        Approval {
            action_class,
            display_category: Some(display_category.into()),
            origin: None,
            binding: binding.into(),
        }
    }
}

/// The answer to a create.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRunResult {
    /// The run.
    pub run: Run,
    /// Whether the key had already created this run.
    pub replayed: bool,
    /// The key sent (yours, or the one generated for the request).
    pub idempotency_key: String,
}

impl CreateRunResult {
    /// A create's answer (for [`Backend`](crate::backend::Backend) implementations).
    pub fn new(run: Run, replayed: bool, idempotency_key: impl Into<String>) -> Self {
        CreateRunResult {
            run,
            replayed,
            idempotency_key: idempotency_key.into(),
        }
    }
}

/// One ListRuns page. An empty page may still carry a token.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPage {
    /// The runs, newest first.
    pub runs: Vec<Run>,
    /// The token of the next page; `None` on the last page.
    pub next_page_token: Option<String>,
}

impl RunPage {
    /// A page of runs.
    pub fn new(runs: Vec<Run>, next_page_token: Option<String>) -> Self {
        RunPage {
            runs,
            next_page_token,
        }
    }
}
