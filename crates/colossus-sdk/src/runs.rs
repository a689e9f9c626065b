//! [`Runs`]: create, read, list, watch, cancel and answer runs.

use crate::calls::Calls;
use crate::model::{Answer, CreateRunRequest, CreateRunResult, ListRunsQuery, Run, RunPage};
use crate::options::RetryPolicy;
use crate::rate_limit;
use crate::requests;
use crate::watch::stream::Watch;
use crate::{Error, Kind, Result, reasons};

/// `client.runs()`. Reads (`get`, `list`, `watch`) retry `UNAVAILABLE` under the client's
/// retry policy; mutations (`create`, `cancel`, `respond`) are sent exactly once, and fail
/// with [`Kind::OutcomeUnknown`] when their outcome is unknown.
#[derive(Debug, Clone, Copy)]
pub struct Runs<'c> {
    calls: &'c Calls,
}

impl<'c> Runs<'c> {
    pub(crate) fn new(calls: &'c Calls) -> Self {
        Runs { calls }
    }

    /// The calls this view makes through (for its methods in other files).
    pub(crate) fn calls(&self) -> &'c Calls {
        self.calls
    }

    /// Starts a run (scope `runs:execute`). The request's idempotency key is on the
    /// result and on every error: after [`Kind::OutcomeUnknown`], sending the same request
    /// again returns the run it may have created. With
    /// [`ClientOptions::rate_limit_retries`](crate::options::ClientOptions::rate_limit_retries)
    /// a `CREATE_RATE_LIMIT` refusal is sent again, with the same key, after the worker's
    /// `retry_delay`; no other failure is ever retried.
    ///
    /// Refused before sending ([`Kind::CapabilityMissing`]) when it needs a capability
    /// the worker does not advertise: a plan action (`plans.continue`), an artifact part
    /// (`artifacts`), an image part (`attachments.image_input`), a research run (`research`).
    pub async fn create(&self, request: CreateRunRequest) -> Result<CreateRunResult> {
        let key = request.idempotency_key().to_owned();
        let keyed = |e: Error| {
            if e.idempotency_key().is_none() {
                e.with_idempotency_key(key.clone())
            } else {
                e
            }
        };
        let backend = self.calls.backend().map_err(keyed)?;
        let info = self.calls.server_info().await.map_err(keyed)?;
        requests::check_create(&request, &info).map_err(keyed)?;
        let mut retries_left = self.calls.options().rate_limit_retries();
        loop {
            let result = self
                .calls
                .mutate(backend.create_run(&request), Some(&key))
                .await;
            match result {
                Ok(mut created) => {
                    tracing::info!(
                        run_id = %created.run.run_id,
                        replayed = created.replayed,
                        idempotency_key = %key,
                        "{}",
                        if created.replayed { "run replayed" } else { "run created" }
                    );
                    created.idempotency_key = key;
                    return Ok(created);
                }
                Err(e) if retries_left > 0 && e.is_retryable() && !e.is_retryable_read() => {
                    retries_left -= 1;
                    let delay = rate_limit::delay(&e, &info);
                    tracing::info!(
                        ?delay,
                        "create rate-limited; sending it again with the same key"
                    );
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One run's current state (scope `runs:read`).
    pub async fn get(&self, run_id: &str) -> Result<Run> {
        self.get_with(run_id, None).await
    }

    pub(crate) async fn get_with(&self, run_id: &str, policy: Option<RetryPolicy>) -> Result<Run> {
        let run = self.calls.read_run(run_id, policy).await?;
        if run.run_id != run_id {
            return Err(Error::local(
                Kind::ProtocolViolation,
                reasons::RESPONSE_MALFORMED,
                "GetRun answered with another run",
            ));
        }
        Ok(run)
    }

    /// Asks a run to stop (scope `runs:control`); never retried.
    pub async fn cancel(&self, run_id: &str) -> Result<Run> {
        requests::check_id(run_id, "run_id")?;
        let backend = self.calls.backend()?;
        self.calls.mutate(backend.cancel_run(run_id), None).await
    }

    /// Answers a pending interaction: [`Answer::Prompt`] (scope `prompts:respond`) or
    /// [`Answer::Approval`] (scope `approvals:respond`); never retried.
    pub async fn respond(&self, run_id: &str, interaction_id: &str, answer: Answer) -> Result<Run> {
        requests::check_respond(run_id, interaction_id, &answer)?;
        let backend = self.calls.backend()?;
        self.calls
            .mutate(backend.respond(run_id, interaction_id, &answer), None)
            .await
    }

    /// One page of this application's runs, newest first (scope `runs:read`). Resume
    /// with [`ListRunsQuery::with_page_token`] and a previous page's token.
    pub async fn list_page(&self, query: &ListRunsQuery) -> Result<RunPage> {
        let backend = self.calls.backend()?;
        let info = self.calls.server_info().await?;
        requests::check_list(query, &info)?;
        self.calls
            .read("ListRuns", None, || backend.list_runs(query))
            .await
    }

    /// The run's events in order, each exactly once, from the start (scope `runs:read`).
    /// See [`Watch`] for the rules; resume a later watch with
    /// [`watch_after`](Self::watch_after) and [`Watch::last_sequence`].
    pub fn watch(&self, run_id: &str) -> Watch {
        self.watch_after(run_id, 0)
    }

    /// The run's events after `after_sequence`.
    pub fn watch_after(&self, run_id: &str, after_sequence: u64) -> Watch {
        Watch::new(self.calls.clone(), run_id, after_sequence)
    }
}
