//! [`Runs`]: create, read, list, watch, cancel and answer runs.

use futures_util::{StreamExt, stream};

use crate::backend::BoxStream;
use crate::calls::Calls;
use crate::model::{
    Answer, CreateRunRequest, CreateRunResult, ListRunsQuery, Run, RunPage, ServerInfo,
};
use crate::options::RetryPolicy;
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
                    let delay = rate_limit_delay(&e, &info);
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

    /// Every page, following tokens through short and empty pages (from the query's
    /// token, if any). A worker that returns an empty page with the same token again
    /// fails with [`Kind::ProtocolViolation`] (`PAGE_NO_PROGRESS`) instead of looping
    /// forever. An error is the last item.
    pub fn pages(&self, query: ListRunsQuery) -> BoxStream<'static, Result<RunPage>> {
        struct State {
            calls: Calls,
            query: ListRunsQuery,
            done: bool,
        }
        let state = State {
            calls: self.calls.clone(),
            query,
            done: false,
        };
        Box::pin(stream::unfold(state, |mut s| async move {
            if s.done {
                return None;
            }
            let page = match Runs::new(&s.calls).list_page(&s.query).await {
                Ok(page) => page,
                Err(e) => {
                    s.done = true;
                    return Some((Err(e), s));
                }
            };
            let next = page.next_page_token.clone().filter(|t| !t.is_empty());
            if next.is_some() && next == s.query.page_token && page.runs.is_empty() {
                s.done = true;
                let e = Error::local(
                    Kind::ProtocolViolation,
                    reasons::PAGE_NO_PROGRESS,
                    "ListRuns returned an empty page with the same continuation token",
                );
                return Some((Err(e), s));
            }
            s.done = next.is_none();
            s.query.page_token = next;
            Some((Ok(page), s))
        }))
    }

    /// Every matching run across [`pages`](Self::pages).
    ///
    /// ```
    /// # #[cfg(feature = "embedded")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> colossus_sdk::Result<()> {
    /// use futures_util::TryStreamExt;
    /// use colossus_sdk::{Client, embedded::EmbeddedRuntime, model::*};
    ///
    /// let client = Client::embedded(EmbeddedRuntime::new());
    /// client.runs().create(CreateRunRequest::text("one")).await?;
    /// let runs: Vec<Run> = client.runs().list(ListRunsQuery::new()).try_collect().await?;
    /// assert_eq!(runs.len(), 1);
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "embedded"))]
    /// # fn main() {}
    /// ```
    pub fn list(&self, query: ListRunsQuery) -> BoxStream<'static, Result<Run>> {
        Box::pin(self.pages(query).flat_map(|page| {
            let items: Vec<Result<Run>> = match page {
                Ok(page) => page.runs.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            stream::iter(items)
        }))
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

    /// The run once it has ended (its status and result). An ended run is read once;
    /// otherwise the run is watched from its current sequence, with every rule of
    /// [`Watch`], and the run the watch's closing GetRun confirmed is returned. A run
    /// waiting for an answer keeps `wait` waiting: bound it with a timeout, or set
    /// [`watch_idle_timeout`](crate::options::ClientOptions::watch_idle_timeout).
    pub async fn wait(&self, run_id: &str) -> Result<Run> {
        let run = self.get(run_id).await?;
        if run.status.is_terminal() {
            return Ok(run);
        }
        let mut watch = self.watch_after(run_id, run.last_sequence);
        while let Some(event) = watch.next().await {
            event?;
        }
        match watch.final_run() {
            Some(run) => Ok(run),
            None => self.get(run_id).await,
        }
    }

    /// Only the run's output text, piece by piece, from the start. An error (a gap, say)
    /// ends it after the text delivered before it.
    pub fn text_stream(&self, run_id: &str) -> BoxStream<'static, Result<String>> {
        self.text_stream_after(run_id, 0)
    }

    /// Only the output text released after `after_sequence`.
    pub fn text_stream_after(
        &self,
        run_id: &str,
        after_sequence: u64,
    ) -> BoxStream<'static, Result<String>> {
        Box::pin(
            self.watch_after(run_id, after_sequence)
                .filter_map(|event| async move {
                    match event {
                        Ok(e) => e.output_text().map(|t| Ok(t.to_owned())),
                        Err(e) => Some(Err(e)),
                    }
                }),
        )
    }
}

/// How long to wait before sending a rate-limited create again: the worker's
/// `RetryInfo`, else one refill period of the slower advertised create bucket, else 1 s.
fn rate_limit_delay(err: &Error, info: &ServerInfo) -> std::time::Duration {
    if let Some(delay) = err.retry_delay().filter(|d| !d.is_zero()) {
        return delay;
    }
    let l = &info.limits;
    let slowest = [
        l.create_rate.refill_per_second,
        l.create_rate_per_application.refill_per_second,
    ]
    .into_iter()
    .filter(|r| *r > 0)
    .min();
    match slowest {
        Some(r) => std::time::Duration::from_secs(1) / r,
        None => std::time::Duration::from_secs(1),
    }
}
