//! [`EmbeddedRuntime`]: runs in the application's process and implements
//! [`Backend`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures_util::{StreamExt, stream};
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, oneshot, watch};
use tokio::task::JoinHandle;

use super::faults::{Fault, FaultKind, Method};
use super::script::{self, Step};
use super::tools;
use crate::backend::{Backend, BoxFuture, BoxStream, WatchedEvent};
use crate::model::{
    ActionClass, Answer, Approval, ApprovalDecision, Artifact, ArtifactManifest, CreateRunRequest,
    CreateRunResult, DeploymentMode, DownloadPart, EventPayload, InputPart, Interaction,
    InteractionKind, InteractionOutcome, Limits, ListRunsQuery, PlanResult, PlanStatus, Prompt,
    Run, RunEvent, RunFailure, RunMode, RunPage, RunResult, RunStatus, ServerInfo,
    ToolActivityPhase, capabilities,
};
use crate::status::{self, CallKind};
use crate::{Code, Error, Kind, Result, reasons};

const DEFAULT_PAGE_SIZE: usize = 50;
const DOWNLOAD_CHUNK: usize = 64 * 1024;

/// An in-process scripted runtime: demos and tests without a worker process.
///
/// A run echoes its text input as one output delta and succeeds, unless its first text
/// part is a run script (`colossus-script v1` and one step per line: `say`, `tool`,
/// `approve`, `ask`, `sleep`, `effect`, `fail`, `plan`, `research`, `repeat`), the
/// language of the reference worker. Runs are kept in memory until the runtime is
/// dropped; closing the client stops every run task.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> colossus_sdk::Result<()> {
/// use futures_util::StreamExt;
/// use colossus_sdk::{Client, embedded::EmbeddedRuntime, model::*};
///
/// let client = Client::embedded(EmbeddedRuntime::new());
/// let script = "colossus-script v1\nask Which branch? | main | release\nsay merged";
/// let run = client.runs().create(CreateRunRequest::text(script)).await?.run;
/// let mut watch = client.runs().watch(&run.run_id);
/// while let Some(event) = watch.next().await {
///     if let EventPayload::InteractionRequested(interaction) = event?.payload {
///         client.runs().respond(&run.run_id, &interaction.interaction_id, Answer::choice("main")).await?;
///     }
/// }
/// let done = client.runs().get(&run.run_id).await?;
/// assert_eq!(done.result.unwrap().output_text, "merged");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct EmbeddedRuntime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EmbeddedRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedRuntime").finish_non_exhaustive()
    }
}

impl Default for EmbeddedRuntime {
    fn default() -> Self {
        Self::new()
    }
}

struct Inner {
    info: ServerInfo,
    tools: HashSet<String>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    runs: HashMap<String, RunState>,
    /// Run IDs, oldest first.
    order: Vec<String>,
    keys: HashMap<String, (String, CreateRunRequest)>,
    artifacts: HashMap<String, (Artifact, Arc<Vec<u8>>)>,
    tasks: Vec<JoinHandle<()>>,
    closed: bool,
    /// Injected faults, oldest first; each is used by the next call it applies to.
    faults: Vec<Fault>,
}

struct RunState {
    run: Run,
    events: Vec<RunEvent>,
    published: watch::Sender<u64>,
    pending: Option<oneshot::Sender<Answer>>,
    cancel: Arc<Notify>,
    cancel_requested: bool,
}

impl EmbeddedRuntime {
    /// A runtime that grants every catalogue tool and advertises `artifacts`,
    /// `attachments.text`, `attachments.image_input`, `plans.continue` and `research`.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder to choose the granted tools and advertised capabilities.
    pub fn builder() -> EmbeddedRuntimeBuilder {
        EmbeddedRuntimeBuilder {
            tools: tools::all_tools().map(str::to_owned).collect(),
            capabilities: [
                capabilities::ARTIFACTS,
                capabilities::TEXT_ATTACHMENTS,
                capabilities::IMAGE_INPUT,
                capabilities::PLANS_CONTINUE,
                capabilities::RESEARCH,
            ]
            .into_iter()
            .map(str::to_owned)
            .collect(),
            max_turns: 100,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms `fault` for the next call it applies to (see [`Fault`]); faults for the same
    /// call are used in the order they were injected, one per call.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> colossus_sdk::Result<()> {
    /// use colossus_sdk::embedded::{EmbeddedRuntime, Fault};
    /// use colossus_sdk::{Client, model::*};
    ///
    /// let runtime = EmbeddedRuntime::new();
    /// let client = Client::embedded(runtime.clone());
    /// let run = client.runs().create(CreateRunRequest::text("hello")).await?.run;
    /// runtime.inject(Fault::drop_watch(1)); // the watch reconnects and sees every event once
    /// let ended = client.runs().wait(&run.run_id).await?;
    /// assert_eq!(ended.status, RunStatus::Succeeded);
    /// # Ok(())
    /// # }
    /// ```
    pub fn inject(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    /// Takes the fault meant for this call of `method`: a `fail` or `rate_limit` fault is
    /// its error, before anything is done; any other fault is returned to shape the call.
    fn enter(&self, method: Method) -> Result<Option<Fault>> {
        let fault = {
            let mut state = self.lock();
            let i = state.faults.iter().position(|f| f.method == method);
            i.map(|i| state.faults.remove(i))
        };
        match fault {
            Some(f) if matches!(f.kind, FaultKind::Fail | FaultKind::RateLimit) => {
                Err(status::from_parts(
                    f.code,
                    f.reason.as_deref(),
                    "injected fault",
                    f.retry_delay,
                    call_kind(method),
                ))
            }
            other => Ok(other),
        }
    }
}

fn call_kind(method: Method) -> CallKind {
    if method.is_mutation() {
        CallKind::Mutation
    } else {
        CallKind::Read
    }
}

/// A call that took effect, then lost its connection under an `unavailable_after_commit`
/// fault.
fn after_commit<T>(fault: Option<Fault>, method: Method, result: Result<T>) -> Result<T> {
    match (fault, result) {
        (Some(f), Ok(_)) if f.kind == FaultKind::AfterCommit => Err(status::from_parts(
            Code::Unavailable,
            None,
            "connection lost after commit",
            None,
            call_kind(method),
        )),
        (_, result) => result,
    }
}

/// A watch stream under a `drop_watch`, `gap` or `replay` fault, which strikes at the
/// event of index `after_events` (counted from the first event this stream sends).
fn faulty_watch(
    inner: BoxStream<'static, Result<WatchedEvent>>,
    fault: Fault,
) -> BoxStream<'static, Result<WatchedEvent>> {
    struct S {
        inner: BoxStream<'static, Result<WatchedEvent>>,
        fault: Fault,
        index: usize,
        first: Option<WatchedEvent>,
        held: Option<WatchedEvent>,
        dropped: bool,
    }
    let start = S {
        inner,
        fault,
        index: 0,
        first: None,
        held: None,
        dropped: false,
    };
    Box::pin(stream::unfold(start, |mut s| async move {
        if s.dropped {
            return None;
        }
        if let Some(held) = s.held.take() {
            return Some((Ok(held), s));
        }
        loop {
            let event = match s.inner.next().await? {
                Ok(event) => event,
                Err(e) => return Some((Err(e), s)),
            };
            let i = s.index;
            s.index += 1;
            if i == 0 {
                s.first = Some(event.clone());
            }
            if i == s.fault.after_events {
                match s.fault.kind {
                    FaultKind::Drop => {
                        s.dropped = true;
                        let err = status::from_parts(
                            Code::Unavailable,
                            None,
                            "connection dropped",
                            None,
                            CallKind::Read,
                        );
                        return Some((Err(err), s));
                    }
                    FaultKind::Gap => continue,
                    FaultKind::Replay if i > 0 => {
                        let first = s.first.clone().expect("the first event was kept");
                        s.held = Some(event);
                        return Some((Ok(first), s));
                    }
                    _ => {}
                }
            }
            return Some((Ok(event), s));
        }
    }))
}

/// Builds an [`EmbeddedRuntime`].
#[derive(Debug, Clone)]
pub struct EmbeddedRuntimeBuilder {
    tools: HashSet<String>,
    capabilities: Vec<String>,
    max_turns: u32,
}

impl EmbeddedRuntimeBuilder {
    /// Grants only these tools (a script's other tools fail, as on a worker).
    pub fn tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Advertises exactly these capabilities.
    pub fn capabilities<I, S>(mut self, capabilities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.capabilities = capabilities.into_iter().map(Into::into).collect();
        self
    }

    /// The runtime.
    pub fn build(self) -> EmbeddedRuntime {
        let info = ServerInfo {
            instance_id: "embedded".into(),
            api_package: "colossus.api.v1alpha1".into(),
            api_version: "v1alpha1".into(),
            api_major: 1,
            deployment_mode: DeploymentMode::Unspecified,
            capabilities: self.capabilities,
            server_version: concat!("colossus-sdk-embedded/", env!("CARGO_PKG_VERSION")).into(),
            limits: Limits {
                max_turns: self.max_turns,
                default_max_turns: 20,
                max_input_parts: 16,
                max_input_bytes: 1 << 20,
                max_list_page_size: 100,
                max_list_status_filters: 9,
                max_artifact_bytes: 16 << 20,
                max_artifact_chunk_bytes: DOWNLOAD_CHUNK as u32,
                ..Limits::default()
            },
        };
        EmbeddedRuntime {
            inner: Arc::new(Inner {
                info,
                tools: self.tools,
                state: Mutex::new(State::default()),
            }),
        }
    }
}

fn new_id(prefix: &str) -> String {
    let mut b = [0u8; 10];
    getrandom::fill(&mut b).expect("the OS random source failed");
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{prefix}_{hex}")
}

fn refused(kind: Kind, code: Code, reason: &str, message: impl Into<String>) -> Error {
    Error::status(kind, code, Some(reason.to_owned()), message)
}

fn run_not_found() -> Error {
    refused(
        Kind::NotFound,
        Code::NotFound,
        reasons::RUN_NOT_FOUND,
        "no such run",
    )
}

fn closed() -> Error {
    Error::status(
        Kind::Transport,
        Code::Unavailable,
        None,
        "the embedded runtime is closed",
    )
}

impl EmbeddedRuntime {
    fn create(&self, request: &CreateRunRequest) -> Result<CreateRunResult> {
        let key = request.idempotency_key().to_owned();
        let texts: Vec<&str> = request
            .input()
            .iter()
            .filter_map(|p| match p {
                InputPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let steps = match texts.first() {
            Some(first) if script::is_script(first) => Some(script::parse(first).map_err(|m| {
                refused(
                    Kind::InvalidArgument,
                    Code::InvalidArgument,
                    reasons::FIELD_INVALID,
                    m,
                )
                .with_metadata("field", "input[0].text")
            })?),
            _ => None,
        };
        let mut state = self.lock();
        if state.closed {
            return Err(closed());
        }
        if let Some((run_id, original)) = state.keys.get(&key) {
            if original != request {
                return Err(refused(
                    Kind::IdempotencyConflict,
                    Code::AlreadyExists,
                    reasons::IDEMPOTENCY_CONFLICT,
                    "the idempotency key was used for a different request",
                ));
            }
            let run = state.runs[run_id].run.clone();
            return Ok(CreateRunResult::new(run, true, key));
        }
        let run_id = new_id("run");
        let mut run = Run::new(run_id.clone(), RunStatus::Queued);
        run.session_id = request
            .session_id()
            .map_or_else(|| new_id("ses"), str::to_owned);
        run.mode = request.mode();
        run.role = if request.role().is_empty() {
            "default".into()
        } else {
            request.role().into()
        };
        run.create_time = SystemTime::now();
        run.update_time = run.create_time;
        run.idempotency_key = key.clone();
        run.end_user_id = request.end_user_id().map(str::to_owned);
        run.max_turns = if request.max_turns() == 0 {
            self.inner.info.limits.default_max_turns
        } else {
            request.max_turns()
        };
        let (published, _) = watch::channel(0);
        let cancel = Arc::new(Notify::new());
        state.runs.insert(
            run_id.clone(),
            RunState {
                run: run.clone(),
                events: Vec::new(),
                published,
                pending: None,
                cancel: cancel.clone(),
                cancel_requested: false,
            },
        );
        state.order.push(run_id.clone());
        state
            .keys
            .insert(key.clone(), (run_id.clone(), request.clone()));
        let exec = Exec {
            rt: self.clone(),
            run_id,
            cancel,
            texts: texts.iter().map(|t| (*t).to_owned()).collect(),
            request: request.clone(),
            output: String::new(),
            turns: 0,
            max_turns: run.max_turns,
        };
        state.tasks.retain(|t| !t.is_finished());
        state.tasks.push(tokio::spawn(exec.main(steps)));
        Ok(CreateRunResult::new(run, false, key))
    }

    fn get(&self, run_id: &str) -> Result<Run> {
        let state = self.lock();
        state
            .runs
            .get(run_id)
            .map(|r| r.run.clone())
            .ok_or_else(run_not_found)
    }

    fn list(&self, query: &ListRunsQuery) -> Result<RunPage> {
        let state = self.lock();
        let offset: usize = match query.page_token() {
            None => 0,
            Some(t) => t
                .strip_prefix("o")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| {
                    refused(
                        Kind::InvalidArgument,
                        Code::InvalidArgument,
                        reasons::PAGE_TOKEN_INVALID,
                        "bad page token",
                    )
                })?,
        };
        let size = match query.requested_page_size() {
            0 => DEFAULT_PAGE_SIZE,
            n => (n as usize).min(self.inner.info.limits.max_list_page_size as usize),
        };
        let matching: Vec<&Run> = state
            .order
            .iter()
            .rev()
            .map(|id| &state.runs[id].run)
            .filter(|r| {
                query.status_filter().is_empty() || query.status_filter().contains(&r.status)
            })
            .collect();
        let runs: Vec<Run> = matching
            .iter()
            .skip(offset)
            .take(size)
            .map(|r| (*r).clone())
            .collect();
        let next = offset + runs.len();
        let token = (next < matching.len()).then(|| format!("o{next}"));
        Ok(RunPage::new(runs, token))
    }

    fn cancel(&self, run_id: &str) -> Result<Run> {
        let mut state = self.lock();
        let rs = state.runs.get_mut(run_id).ok_or_else(run_not_found)?;
        if !rs.run.status.is_terminal() && !rs.cancel_requested {
            rs.cancel_requested = true;
            let previous = rs.run.status;
            push(
                rs,
                EventPayload::StatusChanged {
                    previous_status: previous,
                    status: RunStatus::Cancelling,
                },
            );
            rs.run.status = RunStatus::Cancelling;
            rs.cancel.notify_one();
        }
        Ok(rs.run.clone())
    }

    fn respond(&self, run_id: &str, interaction_id: &str, answer: &Answer) -> Result<Run> {
        let mut state = self.lock();
        let rs = state.runs.get_mut(run_id).ok_or_else(run_not_found)?;
        let Some(pending) = rs
            .run
            .pending_interaction
            .as_ref()
            .filter(|i| i.interaction_id == interaction_id)
        else {
            let resolved = rs.events.iter().any(|e| {
                matches!(&e.payload, EventPayload::InteractionResolved { interaction_id: id, .. } if id == interaction_id)
            });
            return Err(if resolved {
                refused(
                    Kind::FailedPrecondition,
                    Code::FailedPrecondition,
                    reasons::INTERACTION_ALREADY_RESOLVED,
                    "the interaction was already answered",
                )
            } else {
                refused(
                    Kind::NotFound,
                    Code::NotFound,
                    reasons::INTERACTION_NOT_FOUND,
                    "no such interaction",
                )
            });
        };
        let matches = match (&pending.kind, answer) {
            (InteractionKind::Prompt(p), Answer::Prompt { choice }) => p.choices.contains(choice),
            (InteractionKind::Approval(a), Answer::Approval { binding, .. }) => {
                &a.binding == binding
            }
            _ => false,
        };
        if !matches {
            return Err(refused(
                Kind::InvalidArgument,
                Code::InvalidArgument,
                reasons::INTERACTION_ANSWER_MISMATCH,
                "the answer does not echo a displayed choice or the approval binding",
            ));
        }
        if let Some(tx) = rs.pending.take() {
            let _ = tx.send(answer.clone());
        }
        rs.run.pending_interaction = None;
        Ok(rs.run.clone())
    }

    fn watch(&self, run_id: &str, after: u64) -> Result<BoxStream<'static, Result<WatchedEvent>>> {
        let rx = {
            let state = self.lock();
            state
                .runs
                .get(run_id)
                .ok_or_else(run_not_found)?
                .published
                .subscribe()
        };
        let rt = self.clone();
        let run_id = run_id.to_owned();
        Ok(Box::pin(stream::unfold(
            (rt, run_id, after, rx),
            |(rt, run_id, cursor, mut rx)| async move {
                loop {
                    {
                        let state = rt.lock();
                        if state.closed {
                            return Some((Err(closed()), (rt.clone(), run_id, u64::MAX, rx)));
                        }
                        let rs = state.runs.get(&run_id)?;
                        if let Some(event) =
                            usize::try_from(cursor).ok().and_then(|i| rs.events.get(i))
                        {
                            let event = event.clone();
                            drop(state);
                            return Some((
                                Ok(WatchedEvent::new(event)),
                                (rt, run_id, cursor + 1, rx),
                            ));
                        }
                        if rs.run.status.is_terminal() {
                            return None; // a clean close: the client reconciles with GetRun
                        }
                    }
                    rx.changed().await.ok()?;
                }
            },
        )))
    }

    fn upload(&self, manifest: &ArtifactManifest, data: &[u8]) -> Result<Artifact> {
        let digest: String = Sha256::digest(data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if data.len() as u64 != manifest.size_bytes || digest != manifest.sha256 {
            return Err(refused(
                Kind::InvalidArgument,
                Code::InvalidArgument,
                reasons::ARTIFACT_INTEGRITY_MISMATCH,
                "the bytes differ from the manifest",
            ));
        }
        let mut artifact = Artifact::new(
            new_id("art"),
            manifest.media_type.clone(),
            manifest.size_bytes,
            digest,
        );
        artifact.display_name = manifest.display_name.clone();
        self.lock().artifacts.insert(
            artifact.artifact_id.clone(),
            (artifact.clone(), Arc::new(data.to_vec())),
        );
        Ok(artifact)
    }

    fn download(&self, artifact_id: &str) -> Result<BoxStream<'static, Result<DownloadPart>>> {
        let (artifact, data) =
            self.lock()
                .artifacts
                .get(artifact_id)
                .cloned()
                .ok_or_else(|| {
                    refused(
                        Kind::NotFound,
                        Code::NotFound,
                        reasons::ARTIFACT_NOT_FOUND,
                        "no such artifact",
                    )
                })?;
        let mut parts = vec![Ok(DownloadPart::Artifact(artifact))];
        parts.extend(
            data.chunks(DOWNLOAD_CHUNK)
                .map(|c| Ok(DownloadPart::Chunk(c.to_vec()))),
        );
        Ok(Box::pin(stream::iter(parts)))
    }
}

/// Appends one event and wakes the watches.
fn push(rs: &mut RunState, payload: EventPayload) {
    let sequence = rs.events.len() as u64 + 1;
    let event = RunEvent::new(rs.run.run_id.clone(), sequence, payload);
    rs.run.update_time = event.event_time;
    rs.run.last_sequence = sequence;
    rs.events.push(event);
    rs.published.send_replace(sequence);
}

/// How a run's program stopped early.
enum Stop {
    Cancelled,
    Failed(String, String),
}

/// One run's program.
struct Exec {
    rt: EmbeddedRuntime,
    run_id: String,
    cancel: Arc<Notify>,
    texts: Vec<String>,
    request: CreateRunRequest,
    output: String,
    turns: u32,
    max_turns: u32,
}

impl Exec {
    fn with_run<T>(&self, f: impl FnOnce(&mut RunState) -> T) -> Option<T> {
        let mut state = self.rt.lock();
        state.runs.get_mut(&self.run_id).map(f)
    }

    fn emit(&self, payload: EventPayload) -> Result<(), Stop> {
        match self.with_run(|rs| (rs.cancel_requested, push(rs, payload))) {
            Some((true, _)) => Err(Stop::Cancelled),
            _ => Ok(()),
        }
    }

    fn set_status(&self, status: RunStatus) -> Result<(), Stop> {
        self.with_run(|rs| {
            if rs.cancel_requested {
                return Err(Stop::Cancelled);
            }
            let previous = rs.run.status;
            push(
                rs,
                EventPayload::StatusChanged {
                    previous_status: previous,
                    status,
                },
            );
            rs.run.status = status;
            Ok(())
        })
        .unwrap_or(Err(Stop::Cancelled))
    }

    fn check_cancel(&self) -> Result<(), Stop> {
        match self.with_run(|rs| rs.cancel_requested) {
            Some(false) => Ok(()),
            _ => Err(Stop::Cancelled),
        }
    }

    fn say(&mut self, text: &str) -> Result<(), Stop> {
        self.output.push_str(text);
        self.emit(EventPayload::OutputDelta {
            text: text.to_owned(),
        })
    }

    fn turn(&mut self) -> Result<(), Stop> {
        self.turns += 1;
        if self.turns > self.max_turns {
            return Err(Stop::Failed(
                "turn_limit".into(),
                "the run used its whole turn budget".into(),
            ));
        }
        Ok(())
    }

    fn activity(
        &self,
        id: &str,
        class: ActionClass,
        category: &str,
        phase: ToolActivityPhase,
    ) -> Result<(), Stop> {
        self.emit(EventPayload::ToolActivity {
            activity_id: id.to_owned(),
            action_class: class,
            display_category: category.to_owned(),
            phase,
        })
    }

    fn tool(&self, tool: &str, pc: usize, fail: bool) -> Result<(), Stop> {
        let (class, category) = tools::face(tool).unwrap_or((ActionClass::Unspecified, "tools"));
        let id = format!("act_{pc}");
        if !self.rt.inner.tools.contains(tool) {
            return self.activity(&id, class, category, ToolActivityPhase::Failed);
        }
        self.activity(&id, class, category, ToolActivityPhase::Started)?;
        let end = if fail {
            ToolActivityPhase::Failed
        } else {
            ToolActivityPhase::Completed
        };
        self.activity(&id, class, category, end)
    }

    async fn sleep(&self, duration: Option<Duration>) -> Result<(), Stop> {
        self.check_cancel()?;
        let cancelled = self.cancel.notified();
        match duration {
            Some(d) => tokio::select! {
                _ = tokio::time::sleep(d) => {}
                _ = cancelled => {}
            },
            None => cancelled.await,
        }
        self.check_cancel()
    }

    /// Asks and waits for the answer (or a cancel).
    async fn ask(&self, kind: InteractionKind) -> Result<Answer, Stop> {
        let interaction = Interaction::new(new_id("int"), kind);
        let id = interaction.interaction_id.clone();
        let (tx, rx) = oneshot::channel();
        self.with_run(|rs| {
            rs.pending = Some(tx);
            rs.run.pending_interaction = Some(interaction.clone());
        });
        self.set_status(RunStatus::WaitingForInput)?;
        self.emit(EventPayload::InteractionRequested(interaction))?;
        let cancelled = self.cancel.notified();
        let answer = tokio::select! {
            answer = rx => answer.ok(),
            _ = cancelled => None,
        };
        let Some(answer) = answer else {
            self.with_run(|rs| {
                rs.pending = None;
                rs.run.pending_interaction = None;
                push(
                    rs,
                    EventPayload::InteractionResolved {
                        interaction_id: id,
                        outcome: InteractionOutcome::Cancelled,
                        choice: String::new(),
                    },
                );
            });
            return Err(Stop::Cancelled);
        };
        let (outcome, choice) = match &answer {
            Answer::Prompt { choice } => (InteractionOutcome::Answered, choice.clone()),
            Answer::Approval {
                decision: ApprovalDecision::Approve,
                ..
            } => (InteractionOutcome::Approved, String::new()),
            Answer::Approval { .. } => (InteractionOutcome::Denied, String::new()),
        };
        self.emit(EventPayload::InteractionResolved {
            interaction_id: id,
            outcome,
            choice,
        })?;
        self.set_status(RunStatus::Running)?;
        Ok(answer)
    }

    async fn step(&mut self, step: &Step, pc: usize) -> Result<(), Stop> {
        match step {
            Step::Say(text) | Step::Plan(text) => self.say(text),
            Step::Tool { tool, fail } => {
                self.turn()?;
                self.tool(tool, pc, *fail)
            }
            Step::Approve { tool, origin } => {
                self.turn()?;
                let (class, category) =
                    tools::face(tool).unwrap_or((ActionClass::Unspecified, "tools"));
                if !self.rt.inner.tools.contains(tool) {
                    return self.activity(
                        &format!("act_{pc}"),
                        class,
                        category,
                        ToolActivityPhase::Failed,
                    );
                }
                let mut approval = Approval::new(class, category, format!("bnd_{}", new_id("b")));
                if let Some(o) = origin {
                    approval.display_category = None;
                    approval.origin = Some(o.clone());
                }
                match self.ask(InteractionKind::Approval(approval)).await? {
                    Answer::Approval {
                        decision: ApprovalDecision::Approve,
                        ..
                    } => self.tool(tool, pc, false),
                    _ => self.activity(
                        &format!("act_{pc}"),
                        class,
                        category,
                        ToolActivityPhase::Failed,
                    ),
                }
            }
            Step::Ask { question, choices } => {
                self.turn()?;
                self.ask(InteractionKind::Prompt(Prompt::new(
                    question.clone(),
                    choices.clone(),
                )))
                .await
                .map(|_| ())
            }
            Step::Sleep(ms) => self.sleep(ms.map(Duration::from_millis)).await,
            Step::Effect => self.activity(
                &format!("act_{pc}"),
                ActionClass::Execute,
                "external effect",
                ToolActivityPhase::Started,
            ),
            Step::Crash => Err(Stop::Failed(
                "crash_disabled".into(),
                "this worker does not allow the crash step".into(),
            )),
            Step::Fail { code, message } => Err(Stop::Failed(code.clone(), message.clone())),
            Step::Research => self.research(pc),
        }
    }

    fn research(&mut self, pc: usize) -> Result<(), Stop> {
        let Some(options) = self.request.research().cloned() else {
            return Err(Stop::Failed(
                "research_unavailable".into(),
                "only a research run can collect evidence".into(),
            ));
        };
        for depth in 0..options.depth {
            for lane in &options.lanes {
                let class = if lane.as_str() == "WEB" {
                    ActionClass::Network
                } else {
                    ActionClass::Read
                };
                let id = format!("act_{pc}_{lane}_{depth}");
                self.activity(&id, class, "evidence", ToolActivityPhase::Started)?;
                self.activity(&id, class, "evidence", ToolActivityPhase::Completed)?;
            }
        }
        let topic = self
            .texts
            .first()
            .and_then(|t| t.lines().next())
            .unwrap_or("the question")
            .to_owned();
        let report = format!(
            "Report on {topic}: {} sources over {} rounds.",
            options.lanes.len(),
            options.depth
        );
        self.say(&report)
    }

    async fn program(&mut self, steps: Option<Vec<Step>>) -> Result<(), Stop> {
        self.set_status(RunStatus::Running)?;
        match steps {
            Some(steps) => {
                for (pc, step) in steps.iter().enumerate() {
                    self.check_cancel()?;
                    self.step(step, pc).await?;
                }
                Ok(())
            }
            None => match self.request.mode() {
                RunMode::Plan => {
                    let first = self
                        .texts
                        .join("\n")
                        .lines()
                        .next()
                        .unwrap_or("untitled")
                        .to_owned();
                    self.say(&format!("Draft plan: {first}"))
                }
                RunMode::Research => self.research(0),
                _ => {
                    let joined = self.texts.join("\n");
                    self.say(&joined)
                }
            },
        }
    }

    async fn main(mut self, steps: Option<Vec<Step>>) {
        let outcome = self.program(steps).await;
        let mut result = RunResult::text(self.output.clone());
        if self.request.mode() == RunMode::Plan {
            result.plan = Some(PlanResult {
                plan_id: format!("plan_{}", self.run_id),
                revision: self.request.plan_action().map_or(1, |a| a.revision + 1),
                status: PlanStatus::Draft,
            });
        }
        let status = match outcome {
            Ok(()) => RunStatus::Succeeded,
            Err(Stop::Cancelled) => RunStatus::Cancelled,
            Err(Stop::Failed(code, message)) => {
                result.failure = Some(RunFailure::new(code, message));
                RunStatus::Failed
            }
        };
        self.with_run(|rs| {
            let status = if rs.cancel_requested {
                RunStatus::Cancelled
            } else {
                status
            };
            if status == RunStatus::Cancelled {
                result.failure = None;
            }
            rs.run.status = status;
            rs.run.result = Some(result.clone());
            rs.run.pending_interaction = None;
            rs.pending = None;
            push(
                rs,
                EventPayload::RunTerminated {
                    status,
                    result: Some(result),
                },
            );
        });
    }
}

impl Backend for EmbeddedRuntime {
    fn server_info(&self) -> BoxFuture<'_, Result<ServerInfo>> {
        let info = self.inner.info.clone();
        Box::pin(async move {
            let fault = self.enter(Method::GetServerInfo)?;
            after_commit(fault, Method::GetServerInfo, Ok(info))
        })
    }

    fn create_run<'a>(
        &'a self,
        request: &'a CreateRunRequest,
    ) -> BoxFuture<'a, Result<CreateRunResult>> {
        Box::pin(async move {
            let fault = self.enter(Method::CreateRun)?;
            after_commit(fault, Method::CreateRun, self.create(request))
        })
    }

    fn get_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async move {
            let fault = self.enter(Method::GetRun)?;
            let mut run = self.get(run_id);
            if let (Some(f), Ok(r)) = (&fault, &mut run)
                && f.kind == FaultKind::NotStarted
            {
                r.status = RunStatus::Queued;
                r.last_sequence = 0;
                r.result = None;
            }
            after_commit(fault, Method::GetRun, run)
        })
    }

    fn list_runs<'a>(&'a self, query: &'a ListRunsQuery) -> BoxFuture<'a, Result<RunPage>> {
        Box::pin(async move {
            let fault = self.enter(Method::ListRuns)?;
            after_commit(fault, Method::ListRuns, self.list(query))
        })
    }

    fn watch_run<'a>(
        &'a self,
        run_id: &'a str,
        after_sequence: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchedEvent>>>> {
        Box::pin(async move {
            match self.enter(Method::WatchRun)? {
                Some(f)
                    if matches!(f.kind, FaultKind::Drop | FaultKind::Gap | FaultKind::Replay) =>
                {
                    Ok(faulty_watch(self.watch(run_id, after_sequence)?, f))
                }
                fault => after_commit(fault, Method::WatchRun, self.watch(run_id, after_sequence)),
            }
        })
    }

    fn cancel_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async move {
            let fault = self.enter(Method::CancelRun)?;
            after_commit(fault, Method::CancelRun, self.cancel(run_id))
        })
    }

    fn respond<'a>(
        &'a self,
        run_id: &'a str,
        interaction_id: &'a str,
        answer: &'a Answer,
    ) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async move {
            let fault = self.enter(Method::RespondInteraction)?;
            let result = EmbeddedRuntime::respond(self, run_id, interaction_id, answer);
            after_commit(fault, Method::RespondInteraction, result)
        })
    }

    fn upload_artifact<'a>(
        &'a self,
        manifest: &'a ArtifactManifest,
        data: &'a [u8],
    ) -> BoxFuture<'a, Result<Artifact>> {
        Box::pin(async move {
            let fault = self.enter(Method::UploadArtifact)?;
            after_commit(fault, Method::UploadArtifact, self.upload(manifest, data))
        })
    }

    fn download_artifact<'a>(
        &'a self,
        artifact_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>> {
        Box::pin(async move {
            let fault = self.enter(Method::DownloadArtifact)?;
            after_commit(fault, Method::DownloadArtifact, self.download(artifact_id))
        })
    }

    /// Stops every run task and ends every watch.
    fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        for task in state.tasks.drain(..) {
            task.abort();
        }
        for rs in state.runs.values() {
            rs.published.send_modify(|_| {});
        }
    }
}
