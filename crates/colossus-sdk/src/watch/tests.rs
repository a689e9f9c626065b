//! The watch driver over a scripted fake backend: each stream and each GetRun answer is
//! given in advance, so every edge case is exact.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{StreamExt, stream};

use crate::backend::{Backend, BoxFuture, BoxStream, WatchedEvent};
use crate::model::*;
use crate::options::ClientOptions;
use crate::testing;
use crate::testing::client::fast_retries;
use crate::{Client, Code, Error, Kind, Result, reasons};

/// One item of a fake watch stream.
enum Item {
    Event(u64, &'static str, bool),
    /// An event rebuilt with the time of now (a backend that re-creates a replay).
    Rebuilt(u64, &'static str),
    OtherRun(u64),
    Fail(Error),
    /// Never answers (for idle timeouts and drops).
    Hang,
}

#[derive(Default)]
struct Fake {
    streams: Mutex<VecDeque<Vec<Item>>>,
    runs: Mutex<VecDeque<Result<Run>>>,
    opened_after: Mutex<Vec<u64>>,
    dropped: Arc<Mutex<u32>>,
}

struct DropFlag(Arc<Mutex<u32>>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        *self.0.lock().unwrap() += 1;
    }
}

fn event(seq: u64, text: &str, terminal: bool) -> RunEvent {
    let payload = if terminal {
        EventPayload::RunTerminated {
            status: RunStatus::Succeeded,
            result: None,
        }
    } else {
        EventPayload::OutputDelta {
            text: text.to_owned(),
        }
    };
    let mut e = RunEvent::new("r1", seq, payload);
    e.event_time = std::time::SystemTime::UNIX_EPOCH;
    e
}

fn unavailable() -> Error {
    Error::status(Kind::Transport, Code::Unavailable, None, "gone")
}

fn run(status: RunStatus, last: u64) -> Result<Run> {
    let mut r = Run::new("r1", status);
    r.last_sequence = last;
    Ok(r)
}

impl Backend for Fake {
    fn server_info(&self) -> BoxFuture<'_, Result<ServerInfo>> {
        Box::pin(async { Ok(ServerInfo::default()) })
    }
    fn create_run<'a>(&'a self, _: &'a CreateRunRequest) -> BoxFuture<'a, Result<CreateRunResult>> {
        Box::pin(async { Err(unavailable()) })
    }
    fn get_run<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Run>> {
        let next = self
            .runs
            .lock()
            .unwrap()
            .pop_front()
            .expect("an unexpected GetRun");
        Box::pin(async move { next })
    }
    fn list_runs<'a>(&'a self, _: &'a ListRunsQuery) -> BoxFuture<'a, Result<RunPage>> {
        Box::pin(async { Ok(RunPage::default()) })
    }
    fn watch_run<'a>(
        &'a self,
        _: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchedEvent>>>> {
        self.opened_after.lock().unwrap().push(after);
        let items = self
            .streams
            .lock()
            .unwrap()
            .pop_front()
            .expect("an unexpected WatchRun");
        let flag = DropFlag(self.dropped.clone());
        Box::pin(async move {
            let s = stream::iter(items).then(move |item| {
                let _keep = &flag;
                async move {
                    match item {
                        Item::Event(seq, text, terminal) => {
                            Ok(WatchedEvent::new(event(seq, text, terminal)))
                        }
                        Item::Rebuilt(seq, text) => {
                            let mut e = event(seq, text, false);
                            e.event_time = std::time::SystemTime::now();
                            Ok(WatchedEvent::new(e))
                        }
                        Item::OtherRun(seq) => {
                            let mut e = event(seq, "x", false);
                            e.run_id = "r2".into();
                            Ok(WatchedEvent::new(e))
                        }
                        Item::Fail(e) => Err(e),
                        Item::Hang => std::future::pending().await,
                    }
                }
            });
            Ok(Box::pin(s) as BoxStream<'static, _>)
        })
    }
    fn cancel_run<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async { Err(unavailable()) })
    }
    fn respond<'a>(&'a self, _: &'a str, _: &'a str, _: &'a Answer) -> BoxFuture<'a, Result<Run>> {
        Box::pin(async { Err(unavailable()) })
    }
    fn upload_artifact<'a>(
        &'a self,
        _: &'a ArtifactManifest,
        _: &'a [u8],
    ) -> BoxFuture<'a, Result<Artifact>> {
        Box::pin(async { Err(unavailable()) })
    }
    fn download_artifact<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>> {
        Box::pin(async { Err(unavailable()) })
    }
}

fn client(streams: Vec<Vec<Item>>, runs: Vec<Result<Run>>) -> (Client, Arc<Fake>) {
    let fake = Arc::new(Fake {
        streams: Mutex::new(streams.into()),
        runs: Mutex::new(runs.into()),
        ..Fake::default()
    });
    (
        Client::from_backend(Box::new(Shared(fake.clone())), fast_retries(3)),
        fake,
    )
}

/// Lets a test keep a handle on the fake the client owns.
struct Shared(Arc<Fake>);
impl Backend for Shared {
    fn server_info(&self) -> BoxFuture<'_, Result<ServerInfo>> {
        self.0.server_info()
    }
    fn create_run<'a>(&'a self, r: &'a CreateRunRequest) -> BoxFuture<'a, Result<CreateRunResult>> {
        self.0.create_run(r)
    }
    fn get_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Run>> {
        self.0.get_run(id)
    }
    fn list_runs<'a>(&'a self, q: &'a ListRunsQuery) -> BoxFuture<'a, Result<RunPage>> {
        self.0.list_runs(q)
    }
    fn watch_run<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchedEvent>>>> {
        self.0.watch_run(id, after)
    }
    fn cancel_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Run>> {
        self.0.cancel_run(id)
    }
    fn respond<'a>(&'a self, r: &'a str, i: &'a str, a: &'a Answer) -> BoxFuture<'a, Result<Run>> {
        self.0.respond(r, i, a)
    }
    fn upload_artifact<'a>(
        &'a self,
        m: &'a ArtifactManifest,
        d: &'a [u8],
    ) -> BoxFuture<'a, Result<Artifact>> {
        self.0.upload_artifact(m, d)
    }
    fn download_artifact<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<DownloadPart>>>> {
        self.0.download_artifact(id)
    }
}

/// Drains a watch of "r1": the delivered sequences, the final error, the last cursor.
async fn drain(client: &Client) -> (Vec<u64>, Option<Error>, u64) {
    let (seen, err, watch) = testing::client::drain(client.runs().watch("r1")).await;
    (seen, err, watch.last_sequence())
}

#[tokio::test]
async fn replays_across_a_reconnect_are_delivered_once() {
    let (c, fake) = client(
        vec![
            vec![
                Item::Event(1, "a", false),
                Item::Event(2, "b", false),
                Item::Fail(unavailable()),
            ],
            vec![
                Item::Event(1, "a", false),
                Item::Event(2, "b", false),
                Item::Event(3, "end", true),
            ],
        ],
        vec![run(RunStatus::Succeeded, 3)],
    );
    let (seen, err, last) = drain(&c).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(seen, vec![1, 2, 3]);
    assert_eq!(last, 3);
    assert_eq!(
        *fake.opened_after.lock().unwrap(),
        vec![0, 2],
        "resumed from the cursor"
    );
}

#[tokio::test]
async fn an_altered_replay_fails_the_watch() {
    let (c, _) = client(
        vec![
            vec![Item::Event(1, "a", false), Item::Fail(unavailable())],
            vec![Item::Event(1, "A", false)],
        ],
        vec![],
    );
    let (seen, err, _) = drain(&c).await;
    assert_eq!(seen, vec![1]);
    assert_eq!(err.unwrap().reason(), Some(reasons::WATCH_REPLAY_ALTERED));
}

#[tokio::test]
async fn a_gap_fails_with_watch_gap() {
    let (c, _) = client(
        vec![vec![Item::Event(1, "a", false), Item::Event(3, "c", false)]],
        vec![],
    );
    let (seen, err, last) = drain(&c).await;
    let err = err.unwrap();
    assert_eq!(seen, vec![1]);
    assert_eq!(last, 1);
    assert!(err.is(Kind::WatchGap));
}

#[tokio::test]
async fn another_runs_event_fails() {
    let (c, _) = client(vec![vec![Item::OtherRun(1)]], vec![]);
    assert_eq!(
        drain(&c).await.1.unwrap().reason(),
        Some(reasons::WATCH_WRONG_RUN)
    );
}

#[tokio::test]
async fn a_non_retryable_failure_ends_the_watch_without_reconnecting() {
    let denied = Error::status(
        Kind::PermissionDenied,
        Code::PermissionDenied,
        Some("SCOPE_MISSING".into()),
        "no",
    );
    let (c, fake) = client(
        vec![vec![Item::Event(1, "a", false), Item::Fail(denied)]],
        vec![],
    );
    let err = drain(&c).await.1.unwrap();
    assert!(err.is(Kind::PermissionDenied));
    assert_eq!(fake.opened_after.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn reconnects_stop_when_the_attempts_are_spent() {
    let (c, fake) = client(
        vec![
            vec![Item::Fail(unavailable())],
            vec![Item::Fail(unavailable())],
            vec![Item::Fail(unavailable())],
        ],
        vec![],
    );
    let err = drain(&c).await.1.unwrap();
    assert!(
        err.is(Kind::Transport),
        "the last failure is reported: {err}"
    );
    assert_eq!(err.code(), Some(Code::Unavailable));
    assert_eq!(fake.opened_after.lock().unwrap().len(), 3, "max_attempts 3");
}

#[tokio::test]
async fn a_clean_close_of_a_running_run_resumes_and_the_end_is_reconciled() {
    let hooks = Arc::new(Mutex::new(Vec::new()));
    let (c, fake) = client(
        vec![
            vec![Item::Event(1, "a", false)],
            vec![Item::Event(2, "end", true)],
        ],
        vec![run(RunStatus::Running, 1), run(RunStatus::Succeeded, 2)],
    );
    let seen_hooks = hooks.clone();
    let mut watch = c.runs().watch("r1").on_reconnect(move |info| {
        seen_hooks
            .lock()
            .unwrap()
            .push((info.attempt, info.after_sequence, info.cause.is_some()));
    });
    let mut seen = Vec::new();
    while let Some(e) = watch.next().await {
        seen.push(e.unwrap().sequence);
    }
    assert_eq!(seen, vec![1, 2]);
    assert!(watch.is_complete());
    assert_eq!(watch.reconnects(), 1);
    assert_eq!(*hooks.lock().unwrap(), vec![(1, 1, false)]);
    assert_eq!(*fake.opened_after.lock().unwrap(), vec![0, 1]);
}

#[tokio::test]
async fn clean_closes_of_a_running_run_spend_the_budget_then_fail() {
    let (c, _) = client(
        vec![vec![], vec![], vec![]],
        vec![
            run(RunStatus::Running, 0),
            run(RunStatus::Running, 0),
            run(RunStatus::Running, 0),
        ],
    );
    let err = drain(&c).await.1.unwrap();
    assert_eq!(err.reason(), Some(reasons::WATCH_RECONNECTS_EXHAUSTED));
    assert!(err.is(Kind::Transport) && !err.is_retryable());
}

#[tokio::test]
async fn a_clean_close_that_get_run_does_not_confirm_fails_closed() {
    let (c, _) = client(
        vec![vec![Item::Event(1, "end", true)]],
        vec![run(RunStatus::Succeeded, 2)],
    );
    assert_eq!(
        drain(&c).await.1.unwrap().reason(),
        Some(reasons::WATCH_RECONCILE_MISMATCH)
    );
    let (c, _) = client(
        vec![vec![Item::Event(1, "end", true)]],
        vec![Err(Error::status(
            Kind::Internal,
            Code::Internal,
            None,
            "cannot tell",
        ))],
    );
    assert!(drain(&c).await.1.unwrap().is(Kind::Internal));
}

#[tokio::test]
async fn an_idle_watch_times_out() {
    let (c, _) = client(vec![vec![Item::Event(1, "a", false), Item::Hang]], vec![]);
    let c = c.with_options(
        ClientOptions::builder()
            .watch_idle_timeout(Some(Duration::from_millis(20)))
            .build()
            .unwrap(),
    );
    let err = drain(&c).await.1.unwrap();
    assert!(err.is(Kind::WatchIdleTimeout) && err.is(Kind::Transport));
}

#[tokio::test]
async fn dropping_a_watch_closes_its_stream() {
    let (c, fake) = client(vec![vec![Item::Event(1, "a", false), Item::Hang]], vec![]);
    let mut watch = c.runs().watch("r1");
    assert_eq!(watch.next().await.unwrap().unwrap().sequence, 1);
    let pending = tokio::time::timeout(Duration::from_millis(20), watch.next()).await;
    assert!(pending.is_err(), "the stream hangs");
    assert_eq!(*fake.dropped.lock().unwrap(), 0);
    drop(watch);
    assert_eq!(
        *fake.dropped.lock().unwrap(),
        1,
        "the backend stream was released"
    );
}

#[tokio::test]
async fn a_resumed_watch_starts_after_the_given_cursor() {
    let (c, fake) = client(
        vec![vec![Item::Event(5, "e", true)]],
        vec![run(RunStatus::Succeeded, 5)],
    );
    let mut watch = c.runs().watch_after("r1", 4);
    assert_eq!(watch.next().await.unwrap().unwrap().sequence, 5);
    assert!(watch.next().await.is_none());
    assert_eq!(*fake.opened_after.lock().unwrap(), vec![4]);
}

#[tokio::test]
async fn every_reopen_starts_after_the_cursor_of_its_resume_plan() {
    // From a stored cursor, through a replay dropped on the second stream: each reopen
    // starts where the core's plan says (the hook reports that plan), never at the
    // caller's starting cursor nor at the last sequence seen on the wire.
    let (c, fake) = client(
        vec![
            vec![Item::Event(3, "c", false), Item::Fail(unavailable())],
            vec![
                Item::Event(3, "c", false),
                Item::Event(4, "d", false),
                Item::Fail(unavailable()),
            ],
            vec![Item::Event(5, "end", true)],
        ],
        vec![run(RunStatus::Succeeded, 5)],
    );
    let plans = Arc::new(Mutex::new(Vec::new()));
    let seen_plans = plans.clone();
    let mut watch = c.runs().watch_after("r1", 2).on_reconnect(move |info| {
        seen_plans
            .lock()
            .unwrap()
            .push((info.attempt, info.after_sequence));
    });
    let mut seen = Vec::new();
    while let Some(e) = watch.next().await {
        seen.push(e.unwrap().sequence);
    }
    assert_eq!(seen, vec![3, 4, 5]);
    assert!(watch.is_complete());
    assert_eq!(*plans.lock().unwrap(), vec![(1, 3), (1, 4)]);
    assert_eq!(*fake.opened_after.lock().unwrap(), vec![2, 3, 4]);
}

#[tokio::test]
async fn a_clean_close_whose_get_run_names_another_run_is_a_reconcile_mismatch() {
    // The same reason as the Go, Python and TypeScript watches (docs/requirements.md, S9):
    // the clean close is what GetRun contradicts, not a malformed answer.
    let mut other = Run::new("r2", RunStatus::Succeeded);
    other.last_sequence = 1;
    let (c, _) = client(vec![vec![Item::Event(1, "end", true)]], vec![Ok(other)]);
    let err = drain(&c).await.1.unwrap();
    assert!(err.is(Kind::ProtocolViolation));
    assert_eq!(err.reason(), Some(reasons::WATCH_RECONCILE_MISMATCH));
}

#[tokio::test]
async fn a_replay_a_backend_rebuilt_with_a_fresh_time_is_altered() {
    // A custom backend's replay is compared on everything it hands over, its time too, as
    // the gRPC backend compares every byte it received: a replay with another time is an
    // altered one on every placement.
    let (c, _) = client(
        vec![
            vec![Item::Event(1, "a", false), Item::Fail(unavailable())],
            vec![Item::Rebuilt(1, "a")],
        ],
        vec![],
    );
    let (seen, err, _) = drain(&c).await;
    assert_eq!(seen, vec![1]);
    assert_eq!(err.unwrap().reason(), Some(reasons::WATCH_REPLAY_ALTERED));
}
