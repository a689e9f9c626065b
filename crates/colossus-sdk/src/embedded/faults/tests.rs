//! The embedded runtime's injected faults, one test each, through the client: the same
//! seven faults as the other SDKs' fake workers, with the same effects.

use std::time::Duration;

use crate::embedded::{EmbeddedRuntime, Fault, Method};
use crate::model::*;
use crate::options::ClientOptions;
use crate::testing::client::{drain, fast_retries};
use crate::{Client, Code, Kind, reasons};

/// A runtime, a client over it, and one ended run of three outputs.
async fn ended_run() -> (EmbeddedRuntime, Client, String) {
    let runtime = EmbeddedRuntime::new();
    let client = Client::embedded(runtime.clone()).with_options(fast_retries(5));
    let request = CreateRunRequest::text("colossus-script v1\nsay one\nsay two\nsay three");
    let run = client.runs().create(request).await.unwrap().run;
    client.runs().wait(&run.run_id).await.unwrap();
    (runtime, client, run.run_id)
}

/// Every event of a watch from the start: the sequences, the error it ended with, and how
/// often it reconnected.
async fn watch_all(client: &Client, run_id: &str) -> (Vec<u64>, Option<crate::Error>, u64) {
    let (seen, err, watch) = drain(client.runs().watch(run_id)).await;
    (seen, err, watch.reconnects())
}

#[tokio::test]
async fn without_a_fault_every_event_comes_once() {
    let (_, client, run_id) = ended_run().await;
    let (seen, err, reconnects) = watch_all(&client, &run_id).await;
    assert!(err.is_none());
    assert_eq!(seen, (1..=seen.len() as u64).collect::<Vec<_>>());
    assert_eq!(reconnects, 0);
}

#[tokio::test]
async fn drop_watch_makes_the_watch_reconnect_from_its_cursor() {
    let (runtime, client, run_id) = ended_run().await;
    let (all, _, _) = watch_all(&client, &run_id).await;
    runtime.inject(Fault::drop_watch(2));
    let (seen, err, reconnects) = watch_all(&client, &run_id).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(seen, all, "each event once, in order");
    assert_eq!(reconnects, 1);
}

#[tokio::test]
async fn gap_fails_the_watch_with_watch_gap() {
    let (runtime, client, run_id) = ended_run().await;
    runtime.inject(Fault::gap(1));
    let (seen, err, _) = watch_all(&client, &run_id).await;
    let err = err.unwrap();
    assert!(err.is(Kind::WatchGap), "{err}");
    assert_eq!(err.reason(), Some(reasons::WATCH_GAP));
    assert_eq!(seen, [1]);
}

#[tokio::test]
async fn replay_sends_the_first_event_again_and_the_watch_drops_it() {
    let (runtime, client, run_id) = ended_run().await;
    let (all, _, _) = watch_all(&client, &run_id).await;
    runtime.inject(Fault::replay(2));
    let (seen, err, _) = watch_all(&client, &run_id).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(seen, all);
}

#[tokio::test]
async fn unavailable_after_commit_leaves_a_create_unknown_and_the_same_key_replays() {
    let runtime = EmbeddedRuntime::new();
    let client = Client::embedded(runtime.clone());
    runtime.inject(Fault::unavailable_after_commit(Method::CreateRun));
    let request = CreateRunRequest::text("hello");
    let err = client.runs().create(request.clone()).await.unwrap_err();
    assert!(err.is(Kind::OutcomeUnknown), "{err}");
    assert_eq!(err.code(), Some(Code::Unavailable));
    assert_eq!(err.idempotency_key(), Some(request.idempotency_key()));
    let again = client.runs().create(request).await.unwrap();
    assert!(again.replayed, "the first create took effect");
    let page = client
        .runs()
        .list_page(&ListRunsQuery::default())
        .await
        .unwrap();
    assert_eq!(page.runs.len(), 1);
}

#[tokio::test]
async fn unavailable_after_commit_on_a_read_is_retried() {
    let (runtime, client, run_id) = ended_run().await;
    runtime.inject(Fault::unavailable_after_commit(Method::GetRun));
    let run = client.runs().get(&run_id).await.unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
}

#[tokio::test]
async fn fail_refuses_the_next_call_with_the_code_and_reason_given() {
    let (runtime, client, run_id) = ended_run().await;
    runtime.inject(Fault::fail(
        Method::GetRun,
        Code::PermissionDenied,
        Some(reasons::SCOPE_MISSING),
    ));
    let err = client.runs().get(&run_id).await.unwrap_err();
    assert!(err.is(Kind::PermissionDenied), "{err}");
    assert_eq!(err.code(), Some(Code::PermissionDenied));
    assert_eq!(err.reason(), Some(reasons::SCOPE_MISSING));
    // One-shot: the next call is answered.
    client.runs().get(&run_id).await.unwrap();
    // An ambiguous failure of a mutation leaves its outcome unknown, as on a worker.
    runtime.inject(Fault::fail(Method::CancelRun, Code::Unavailable, None));
    let err = client.runs().cancel(&run_id).await.unwrap_err();
    assert!(err.is(Kind::OutcomeUnknown), "{err}");
    assert_eq!(err.reason(), None);
}

#[tokio::test]
async fn rate_limit_is_retryable_and_retried_only_when_asked() {
    let runtime = EmbeddedRuntime::new();
    let client = Client::embedded(runtime.clone());
    runtime.inject(Fault::rate_limit(Duration::from_millis(5)));
    let err = client
        .runs()
        .create(CreateRunRequest::text("a"))
        .await
        .unwrap_err();
    assert!(err.is(Kind::ResourceExhausted), "{err}");
    assert_eq!(err.reason(), Some(reasons::CREATE_RATE_LIMIT));
    assert!(err.is_retryable());
    assert_eq!(err.retry_delay(), Some(Duration::from_millis(5)));
    let patient = client.with_options(
        ClientOptions::builder()
            .rate_limit_retries(1)
            .build()
            .unwrap(),
    );
    runtime.inject(Fault::rate_limit(Duration::from_millis(5)));
    let created = patient
        .runs()
        .create(CreateRunRequest::text("b"))
        .await
        .unwrap();
    assert!(!created.replayed, "the refused create created nothing");
}

#[tokio::test]
async fn not_started_makes_wait_follow_the_watch() {
    let (runtime, client, run_id) = ended_run().await;
    runtime.inject(Fault::not_started());
    let early = client.runs().get(&run_id).await.unwrap();
    assert_eq!(
        (early.status, early.last_sequence, early.result.is_none()),
        (RunStatus::Queued, 0, true)
    );
    runtime.inject(Fault::not_started());
    let ended = client.runs().wait(&run_id).await.unwrap();
    assert_eq!(ended.status, RunStatus::Succeeded);
    assert_eq!(ended.result.unwrap().output_text, "onetwothree");
}

#[tokio::test]
async fn a_fault_waits_for_its_own_method() {
    let (runtime, client, run_id) = ended_run().await;
    runtime.inject(Fault::fail(Method::CancelRun, Code::Internal, None));
    client.runs().get(&run_id).await.unwrap();
    let (_, err, _) = watch_all(&client, &run_id).await;
    assert!(err.is_none());
    assert!(client.runs().cancel(&run_id).await.is_err());
    assert_eq!(Fault::not_started().method(), Method::GetRun);
}
