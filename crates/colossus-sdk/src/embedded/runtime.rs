//! [`EmbeddedRuntime`]: runs in the application's process and implements [`Backend`]:
//! each call takes its armed fault (see [`faults`](super::faults)), then reads or updates
//! the [store](super::store); a created run's program runs in the
//! [executor](super::executor).

use std::collections::HashSet;
use std::sync::{Arc, MutexGuard};
use std::time::SystemTime;

use tokio::sync::{Notify, watch};

use super::executor::Exec;
use super::faults::{Fault, FaultKind, Method, after_commit, call_kind, faulty_watch};
use super::script;
use super::store::{DOWNLOAD_CHUNK, RunState, State, Store, closed, new_id, refused};
use super::tools;
use crate::backend::{Backend, BoxFuture, BoxStream, WatchedEvent};
use crate::model::{
    Answer, Artifact, ArtifactManifest, CreateRunRequest, CreateRunResult, DeploymentMode,
    DownloadPart, InputPart, Limits, ListRunsQuery, Run, RunPage, RunStatus, ServerInfo,
    capabilities,
};
use crate::status;
use crate::{Code, Kind, Result, reasons};

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
    tools: Arc<HashSet<String>>,
    store: Arc<Store>,
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
        self.inner.store.lock()
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
                tools: Arc::new(self.tools),
                store: Arc::new(Store::default()),
            }),
        }
    }
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
            store: self.inner.store.clone(),
            tools: self.inner.tools.clone(),
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
            let mut run = self.inner.store.get(run_id);
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
            let max_page_size = self.inner.info.limits.max_list_page_size;
            after_commit(
                fault,
                Method::ListRuns,
                self.inner.store.list(query, max_page_size),
            )
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
                    Ok(faulty_watch(
                        self.inner.store.watch(run_id, after_sequence)?,
                        f,
                    ))
                }
                fault => after_commit(
                    fault,
                    Method::WatchRun,
                    self.inner.store.watch(run_id, after_sequence),
                ),
            }
        })
    }

    fn cancel_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async move {
            let fault = self.enter(Method::CancelRun)?;
            after_commit(fault, Method::CancelRun, self.inner.store.cancel(run_id))
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
            let result = self.inner.store.respond(run_id, interaction_id, answer);
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
            after_commit(
                fault,
                Method::UploadArtifact,
                self.inner.store.upload(manifest, data),
            )
        })
    }

    fn download_artifact<'a>(
        &'a self,
        artifact_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>> {
        Box::pin(async move {
            let fault = self.enter(Method::DownloadArtifact)?;
            after_commit(
                fault,
                Method::DownloadArtifact,
                self.inner.store.download(artifact_id),
            )
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
