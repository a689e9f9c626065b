//! Handling errors: branch on the kind or the reason, never on the message. Shows the one
//! retry an application owns: after `OutcomeUnknown`, send the same create again (same
//! idempotency key) and the worker returns the run it may have created.
//!
//! A host backend that loses the answer of the first create stands in for a connection
//! cut at the wrong moment.
//!
//! `cargo run -p colossus-sdk --example errors`

use std::sync::atomic::{AtomicBool, Ordering};

use colossus_sdk::backend::{Backend, BoxFuture, BoxStream, WatchedEvent};
use colossus_sdk::embedded::EmbeddedRuntime;
use colossus_sdk::model::*;
use colossus_sdk::{Client, Code, Error, Kind, Result, reasons};

/// The embedded runtime, except that the first create's answer is lost after the run was
/// created.
struct LosesFirstAnswer {
    inner: EmbeddedRuntime,
    lost: AtomicBool,
}

impl Backend for LosesFirstAnswer {
    fn server_info(&self) -> BoxFuture<'_, Result<ServerInfo>> {
        self.inner.server_info()
    }
    fn create_run<'a>(&'a self, r: &'a CreateRunRequest) -> BoxFuture<'a, Result<CreateRunResult>> {
        Box::pin(async move {
            let created = self.inner.create_run(r).await?;
            if !self.lost.swap(true, Ordering::SeqCst) {
                let _ = created; // the run exists, but the caller never hears of it
                return Err(Error::status(
                    Kind::Transport,
                    Code::Unavailable,
                    None,
                    "connection reset",
                ));
            }
            Ok(created)
        })
    }
    fn get_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Run>> {
        self.inner.get_run(id)
    }
    fn list_runs<'a>(&'a self, q: &'a ListRunsQuery) -> BoxFuture<'a, Result<RunPage>> {
        self.inner.list_runs(q)
    }
    fn watch_run<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchedEvent>>>> {
        self.inner.watch_run(id, after)
    }
    fn cancel_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Run>> {
        self.inner.cancel_run(id)
    }
    fn respond<'a>(&'a self, r: &'a str, i: &'a str, a: &'a Answer) -> BoxFuture<'a, Result<Run>> {
        self.inner.respond(r, i, a)
    }
    fn upload_artifact<'a>(
        &'a self,
        m: &'a ArtifactManifest,
        d: &'a [u8],
    ) -> BoxFuture<'a, Result<Artifact>> {
        self.inner.upload_artifact(m, d)
    }
    fn download_artifact<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>> {
        self.inner.download_artifact(id)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let client = Client::embedded(LosesFirstAnswer {
        inner: EmbeddedRuntime::new(),
        lost: AtomicBool::new(false),
    });

    // 1. The outcome is unknown: the same request again is safe.
    let request = CreateRunRequest::text("hello");
    let created = match client.runs().create(request.clone()).await {
        Err(e) if e.is(Kind::OutcomeUnknown) => {
            println!(
                "unknown outcome ({e}); sending key {} again",
                request.idempotency_key()
            );
            client.runs().create(request).await?
        }
        other => other?,
    };
    println!(
        "run {} (replayed: {})",
        created.run.run_id, created.replayed
    );
    assert!(created.replayed, "the first attempt had created it");

    // 2. A refusal with a reason: nothing to retry, fix the request.
    let err = client.runs().get("not a valid id").await.unwrap_err();
    assert!(err.is(Kind::InvalidArgument));
    println!(
        "refused locally: reason={:?} field={:?}",
        err.reason(),
        err.metadata().get("field")
    );

    // 3. The same key for a different request is a conflict.
    let key = created.idempotency_key.clone();
    let other = CreateRunRequest::builder()
        .idempotency_key(key)
        .text("something else")
        .build();
    let err = client.runs().create(other).await.unwrap_err();
    assert!(err.is(Kind::IdempotencyConflict));
    assert_eq!(err.reason(), Some(reasons::IDEMPOTENCY_CONFLICT));
    println!("conflict: {err}");
    Ok(())
}
