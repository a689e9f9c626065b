//! The [`Backend`] trait: the raw operations a placement provides, one call each.
//!
//! A [`Client`](crate::Client) runs every rule on top of its backend, whatever it is:
//! request checks and capability gates before anything is sent, per-call timeouts, read
//! retries under the [`RetryPolicy`](crate::options::RetryPolicy), mutations sent exactly
//! once, the watch's dedup, gap detection and clean-close reconciliation (a backend whose
//! `get_run` cannot confirm the end fails the watch closed), and the size and digest
//! checks of downloads. A backend only moves requests and answers.
//!
//! # Plugging in your own backend
//!
//! A host that runs the agent runtime itself implements `Backend` and hands it to
//! [`Client::embedded`](crate::Client::embedded):
//!
//! ```
//! use colossus_sdk::backend::{Backend, BoxFuture, BoxStream, WatchedEvent};
//! use colossus_sdk::model::*;
//! use colossus_sdk::{Client, Error, Kind, Result, reasons};
//!
//! /// A backend that knows one finished run.
//! struct OneRun;
//!
//! fn finished() -> Run {
//!     let mut run = Run::new("run-1", RunStatus::Succeeded);
//!     run.last_sequence = 1;
//!     run
//! }
//!
//! fn unsupported<T>() -> Result<T> {
//!     Err(Error::local(Kind::FailedPrecondition, reasons::CAPABILITY_NOT_SUPPORTED, "not here"))
//! }
//!
//! impl Backend for OneRun {
//!     fn server_info(&self) -> BoxFuture<'_, Result<ServerInfo>> {
//!         Box::pin(async { Ok(ServerInfo::default()) })
//!     }
//!     fn create_run<'a>(&'a self, request: &'a CreateRunRequest) -> BoxFuture<'a, Result<CreateRunResult>> {
//!         Box::pin(async move { Ok(CreateRunResult::new(finished(), false, request.idempotency_key())) })
//!     }
//!     fn get_run<'a>(&'a self, _run_id: &'a str) -> BoxFuture<'a, Result<Run>> {
//!         Box::pin(async { Ok(finished()) })
//!     }
//!     fn list_runs<'a>(&'a self, _query: &'a ListRunsQuery) -> BoxFuture<'a, Result<RunPage>> {
//!         Box::pin(async { Ok(RunPage::new(vec![finished()], None)) })
//!     }
//!     fn watch_run<'a>(&'a self, run_id: &'a str, after: u64)
//!         -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchedEvent>>>> {
//!         let event = RunEvent::new(run_id, 1, EventPayload::RunTerminated {
//!             status: RunStatus::Succeeded,
//!             result: Some(RunResult::text("done")),
//!         });
//!         let events: Vec<Result<WatchedEvent>> =
//!             if after == 0 { vec![Ok(WatchedEvent::new(event))] } else { vec![] };
//!         Box::pin(async move {
//!             Ok(Box::pin(futures_util::stream::iter(events)) as BoxStream<'static, _>)
//!         })
//!     }
//!     fn cancel_run<'a>(&'a self, _run_id: &'a str) -> BoxFuture<'a, Result<Run>> {
//!         Box::pin(async { Ok(finished()) })
//!     }
//!     fn respond<'a>(&'a self, _run: &'a str, _interaction: &'a str, _answer: &'a Answer)
//!         -> BoxFuture<'a, Result<Run>> {
//!         Box::pin(async { unsupported() })
//!     }
//!     fn upload_artifact<'a>(&'a self, _manifest: &'a ArtifactManifest, _data: &'a [u8])
//!         -> BoxFuture<'a, Result<Artifact>> {
//!         Box::pin(async { unsupported() })
//!     }
//!     fn download_artifact<'a>(&'a self, _artifact_id: &'a str)
//!         -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>> {
//!         Box::pin(async { unsupported() })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<()> {
//! let client = Client::embedded(OneRun);
//! let run = client.runs().wait("run-1").await?;
//! assert_eq!(run.status, RunStatus::Succeeded);
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;

use futures_core::Stream;

use crate::Result;
use crate::model::{
    Answer, Artifact, ArtifactManifest, CreateRunRequest, CreateRunResult, DownloadPart,
    ListRunsQuery, Run, RunEvent, RunPage, ServerInfo,
};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A boxed, sendable stream.
pub type BoxStream<'a, T> = Pin<Box<dyn Stream<Item = T> + Send + 'a>>;

/// One event as a backend's watch stream delivered it, with the content the watch
/// compares when the event is sent again (an exact replay is dropped; a different one
/// fails the watch).
#[derive(Debug, Clone)]
pub struct WatchedEvent {
    pub(crate) event: RunEvent,
    pub(crate) content: Vec<u8>,
}

impl WatchedEvent {
    /// An event compared by its own value: every field, [`RunEvent::event_time`] too, as
    /// the gRPC backend compares every byte it received. Send a replay as the event was
    /// first sent (keep it, or its time): one rebuilt with a fresh time is a different
    /// event and fails the watch with `WATCH_REPLAY_ALTERED`.
    pub fn new(event: RunEvent) -> Self {
        let content = format!("{event:?}").into_bytes();
        WatchedEvent { event, content }
    }

    /// An event compared by `content`, its full encoding (the gRPC backend passes the
    /// event's protobuf encoding, so every field of the contract is compared, the ones
    /// the model does not show too).
    pub fn with_content(event: RunEvent, content: Vec<u8>) -> Self {
        WatchedEvent { event, content }
    }

    /// The event.
    pub fn event(&self) -> &RunEvent {
        &self.event
    }
}

/// The raw operations of a placement. Object safe: a [`Client`](crate::Client) holds a
/// `Box<dyn Backend>`. Errors are [`crate::Error`]s; an `UNAVAILABLE` transport failure
/// ([`Error::is_retryable`](crate::Error::is_retryable)) lets the client retry a read or
/// reconnect a watch, any other error is final. See the [module docs](self) for an example.
pub trait Backend: Send + Sync + 'static {
    /// What the worker advertises: capabilities gate calls before they are sent.
    fn server_info(&self) -> BoxFuture<'_, Result<ServerInfo>>;

    /// Starts a run, or returns the one `request.idempotency_key()` already created.
    fn create_run<'a>(
        &'a self,
        request: &'a CreateRunRequest,
    ) -> BoxFuture<'a, Result<CreateRunResult>>;

    /// One run's current state.
    fn get_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Run>>;

    /// One page of runs, newest first.
    fn list_runs<'a>(&'a self, query: &'a ListRunsQuery) -> BoxFuture<'a, Result<RunPage>>;

    /// The run's events after `after_sequence`, in order; the stream ends when the
    /// backend closes it (the client then reconciles with [`get_run`](Self::get_run)).
    fn watch_run<'a>(
        &'a self,
        run_id: &'a str,
        after_sequence: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchedEvent>>>>;

    /// Asks a run to stop.
    fn cancel_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Run>>;

    /// Answers a pending interaction.
    fn respond<'a>(
        &'a self,
        run_id: &'a str,
        interaction_id: &'a str,
        answer: &'a Answer,
    ) -> BoxFuture<'a, Result<Run>>;

    /// Stores an artifact; `data` matches `manifest` (checked by the client).
    fn upload_artifact<'a>(
        &'a self,
        manifest: &'a ArtifactManifest,
        data: &'a [u8],
    ) -> BoxFuture<'a, Result<Artifact>>;

    /// Streams an artifact: its description first, then its bytes.
    fn download_artifact<'a>(
        &'a self,
        artifact_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>>;

    /// Releases the backend's resources; called once by [`Client::close`](crate::Client::close).
    fn close(&self) {}
}
