//! What the application sends: run input, [`CreateRunRequest`], list queries and answers.

use super::{ApprovalDecision, EvidenceLane, PlanActionKind, RunMode, RunStatus};

/// One part of a run's input: text, or a reference to an uploaded artifact (never a
/// path: the worker reads no file the application names).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputPart {
    /// Text input.
    Text(String),
    /// An uploaded artifact.
    Artifact {
        /// The artifact's ID from [`Artifacts::upload`](crate::Artifacts::upload).
        artifact_id: String,
        /// Its media type when known; an `image/*` type lets the SDK apply the image
        /// capability gate before sending.
        media_type: Option<String>,
    },
}

impl InputPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        InputPart::Text(text.into())
    }

    /// An artifact part without a known media type.
    pub fn artifact(artifact_id: impl Into<String>) -> Self {
        InputPart::Artifact {
            artifact_id: artifact_id.into(),
            media_type: None,
        }
    }

    /// An artifact part with its media type (see [`InputPart::Artifact`]).
    pub fn artifact_with_type(
        artifact_id: impl Into<String>,
        media_type: impl Into<String>,
    ) -> Self {
        InputPart::Artifact {
            artifact_id: artifact_id.into(),
            media_type: Some(media_type.into()),
        }
    }
}

/// Continues a draft plan from a PLAN run (needs the `plans.continue` capability).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanAction {
    /// The PLAN run that produced the draft.
    pub source_run_id: String,
    /// The draft's revision.
    pub revision: u64,
    /// What to do with it.
    pub kind: PlanActionKind,
}

impl PlanAction {
    /// A plan action.
    pub fn new(source_run_id: impl Into<String>, revision: u64, kind: PlanActionKind) -> Self {
        PlanAction {
            source_run_id: source_run_id.into(),
            revision,
            kind,
        }
    }
}

/// Options of a RESEARCH run (needs the `research` capability).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResearchOptions {
    /// 1 to 5.
    pub depth: u32,
    /// Distinct, non-empty.
    pub lanes: Vec<EvidenceLane>,
}

impl ResearchOptions {
    /// Research options.
    pub fn new(depth: u32, lanes: Vec<EvidenceLane>) -> Self {
        ResearchOptions { depth, lanes }
    }
}

/// A create request. Build one with [`CreateRunRequest::builder`]; the idempotency key is
/// fixed when it is built (yours, or a fresh one), so sending the same request again after
/// [`Kind::OutcomeUnknown`](crate::Kind::OutcomeUnknown) returns the run it may have
/// created instead of starting a second one.
///
/// ```
/// use colossus_sdk::model::{CreateRunRequest, RunMode};
///
/// let request = CreateRunRequest::builder()
///     .text("Summarise the release notes")
///     .mode(RunMode::Execute)
///     .max_turns(4)
///     .build();
/// assert!(!request.idempotency_key().is_empty());
/// let again = request.clone();
/// assert_eq!(again.idempotency_key(), request.idempotency_key());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRunRequest {
    pub(crate) idempotency_key: String,
    pub(crate) input: Vec<InputPart>,
    pub(crate) mode: RunMode,
    pub(crate) role: String,
    pub(crate) max_turns: u32,
    pub(crate) session_id: Option<String>,
    pub(crate) end_user_id: Option<String>,
    pub(crate) traceparent: Option<String>,
    pub(crate) tracestate: Option<String>,
    pub(crate) plan_action: Option<PlanAction>,
    pub(crate) research: Option<ResearchOptions>,
}

impl CreateRunRequest {
    /// A builder with no input.
    pub fn builder() -> CreateRunRequestBuilder {
        CreateRunRequestBuilder::default()
    }

    /// A one-part text request with every default.
    pub fn text(text: impl Into<String>) -> Self {
        Self::builder().text(text).build()
    }

    /// The idempotency key this request is sent with.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// The input parts.
    pub fn input(&self) -> &[InputPart] {
        &self.input
    }

    /// The run mode (default [`RunMode::Execute`]).
    pub fn mode(&self) -> RunMode {
        self.mode
    }

    /// The logical role (empty: the application's default role).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The turn limit (0: the worker's default).
    pub fn max_turns(&self) -> u32 {
        self.max_turns
    }

    /// The session to continue, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The end user the run acts for, if any.
    pub fn end_user_id(&self) -> Option<&str> {
        self.end_user_id.as_deref()
    }

    /// The W3C traceparent, if any.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// The W3C tracestate, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The plan action, if any.
    pub fn plan_action(&self) -> Option<&PlanAction> {
        self.plan_action.as_ref()
    }

    /// The research options, if any.
    pub fn research(&self) -> Option<&ResearchOptions> {
        self.research.as_ref()
    }
}

/// Builds a [`CreateRunRequest`]; checks happen when it is sent, against what the worker
/// advertises.
#[derive(Debug, Clone, Default)]
pub struct CreateRunRequestBuilder {
    idempotency_key: Option<String>,
    input: Vec<InputPart>,
    mode: Option<RunMode>,
    role: String,
    max_turns: u32,
    session_id: Option<String>,
    end_user_id: Option<String>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    plan_action: Option<PlanAction>,
    research: Option<ResearchOptions>,
}

impl CreateRunRequestBuilder {
    /// Appends a text part.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.input.push(InputPart::text(text));
        self
    }

    /// Appends any input part.
    pub fn part(mut self, part: InputPart) -> Self {
        self.input.push(part);
        self
    }

    /// Uses this idempotency key (1-128 of `[A-Za-z0-9._:-]`) instead of a fresh one. It is
    /// used as given: a malformed key is refused when sent, never replaced.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The run mode (default [`RunMode::Execute`]).
    pub fn mode(mut self, mode: RunMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// The logical role.
    pub fn role(mut self, role: impl Into<String>) -> Self {
        self.role = role.into();
        self
    }

    /// The turn limit.
    pub fn max_turns(mut self, n: u32) -> Self {
        self.max_turns = n;
        self
    }

    /// Continue this session.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Act for this end user (1-128 of `[A-Za-z0-9._:@+-]`).
    pub fn end_user_id(mut self, id: impl Into<String>) -> Self {
        self.end_user_id = Some(id.into());
        self
    }

    /// The W3C trace context of the caller's span.
    pub fn trace_context(
        mut self,
        traceparent: impl Into<String>,
        tracestate: impl Into<String>,
    ) -> Self {
        self.traceparent = Some(traceparent.into());
        let state = tracestate.into();
        self.tracestate = (!state.is_empty()).then_some(state);
        self
    }

    /// Continue a draft plan.
    pub fn plan_action(mut self, action: PlanAction) -> Self {
        self.plan_action = Some(action);
        self
    }

    /// Research options (with [`RunMode::Research`]).
    pub fn research(mut self, options: ResearchOptions) -> Self {
        self.research = Some(options);
        self
    }

    /// The request, with its idempotency key fixed.
    pub fn build(self) -> CreateRunRequest {
        CreateRunRequest {
            idempotency_key: self.idempotency_key.unwrap_or_else(new_idempotency_key),
            input: self.input,
            mode: self.mode.unwrap_or(RunMode::Execute),
            role: self.role,
            max_turns: self.max_turns,
            session_id: self.session_id,
            end_user_id: self.end_user_id,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
            plan_action: self.plan_action,
            research: self.research,
        }
    }
}

/// A fresh key in the contract's grammar: `rs-` and a random (version 4) UUID.
fn new_idempotency_key() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source failed");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "rs-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Which runs a ListRuns page holds.
///
/// ```
/// use colossus_sdk::model::{ListRunsQuery, RunStatus};
/// let query = ListRunsQuery::new().statuses([RunStatus::Running]).page_size(50);
/// assert_eq!(query.page_token(), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListRunsQuery {
    pub(crate) statuses: Vec<RunStatus>,
    pub(crate) page_size: u32,
    pub(crate) page_token: Option<String>,
}

impl ListRunsQuery {
    /// Every run, the worker's page size.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only runs in these statuses.
    pub fn statuses(mut self, statuses: impl IntoIterator<Item = RunStatus>) -> Self {
        self.statuses = statuses.into_iter().collect();
        self
    }

    /// At most this many runs per page (0: the worker's default).
    pub fn page_size(mut self, n: u32) -> Self {
        self.page_size = n;
        self
    }

    /// Resume from a previous page's [`next_page_token`](crate::model::RunPage::next_page_token).
    pub fn page_token(&self) -> Option<&str> {
        self.page_token.as_deref()
    }

    /// Sets the page token.
    pub fn with_page_token(mut self, token: impl Into<String>) -> Self {
        self.page_token = Some(token.into());
        self
    }

    /// The status filter.
    pub fn status_filter(&self) -> &[RunStatus] {
        &self.statuses
    }

    /// The requested page size.
    pub fn requested_page_size(&self) -> u32 {
        self.page_size
    }
}

/// The answer to an interaction.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Echo one of a prompt's choices exactly (scope `prompts:respond`).
    Prompt {
        /// The choice.
        choice: String,
    },
    /// Echo an approval's binding with a decision (scope `approvals:respond`).
    Approval {
        /// The approval's binding.
        binding: String,
        /// The decision.
        decision: ApprovalDecision,
    },
}

impl Answer {
    /// A prompt answer.
    pub fn choice(choice: impl Into<String>) -> Self {
        Answer::Prompt {
            choice: choice.into(),
        }
    }

    /// An approval answer.
    pub fn approval(binding: impl Into<String>, decision: ApprovalDecision) -> Self {
        Answer::Approval {
            binding: binding.into(),
            decision,
        }
    }
}

#[cfg(test)]
mod tests;
