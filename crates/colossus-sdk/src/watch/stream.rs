//! The watch driver: runs [`WatchCore`] over any backend's watch streams.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;
use futures_util::{StreamExt, stream};

use super::core::{CloseAction, Verdict, WatchCore};
use crate::backend::{BoxStream, WatchedEvent};
use crate::calls::Calls;
use crate::model::{Run, RunEvent};
use crate::requests;
use crate::{Error, Kind, Result, reasons};

/// What keeping an event in the replay window costs beyond its encoding.
const EVENT_OVERHEAD: usize = 160;

type ReconnectHook = Box<dyn Fn(&ReconnectInfo<'_>) + Send + Sync>;

#[derive(Default)]
struct Progress {
    last: AtomicU64,
    reconnects: AtomicU64,
    completed: AtomicBool,
    final_run: Mutex<Option<Run>>,
    on_reconnect: Mutex<Option<ReconnectHook>>,
}

/// What a watch tells its [`Watch::on_reconnect`] hook before each reconnect.
#[non_exhaustive]
#[derive(Debug)]
pub struct ReconnectInfo<'a> {
    /// The run being watched.
    pub run_id: &'a str,
    /// 1 for the first reconnect since the last delivered event.
    pub attempt: u32,
    /// How long the watch waits before reconnecting.
    pub delay: Duration,
    /// The cursor the new stream starts after.
    pub after_sequence: u64,
    /// The retryable failure, or `None` after a clean close of a still-running run.
    pub cause: Option<&'a Error>,
}

/// A run's events in order, each exactly once; a [`Stream`] of [`RunEvent`].
///
/// - an event sent again with the same content is dropped; with different content the
///   watch fails ([`Kind::ProtocolViolation`], `WATCH_REPLAY_ALTERED`), and so does a
///   replay older than the bounded replay window (`WATCH_REPLAY_UNVERIFIABLE`); a skipped
///   sequence fails with [`Kind::WatchGap`];
/// - after an `UNAVAILABLE` failure it reconnects from [`last_sequence`](Self::last_sequence)
///   under the retry policy (attempts and elapsed time, both restarted by every delivered
///   event); once spent it fails with the last failure (`WATCH_RECONNECTS_EXHAUSTED`
///   when the stream only kept closing cleanly); any other failure ends it at once;
/// - a stream that closes cleanly ends the watch only when GetRun shows the same run
///   terminal at exactly the delivered cursor; a still-running run is resumed.
///
/// An error is the last item. Dropping the watch closes its stream at once; it never
/// cancels the run.
///
/// ```
/// # #[cfg(feature = "embedded")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> colossus_sdk::Result<()> {
/// use futures_util::StreamExt;
/// use colossus_sdk::{Client, embedded::EmbeddedRuntime, model::*};
///
/// let client = Client::embedded(EmbeddedRuntime::new());
/// let run = client.runs().create(CreateRunRequest::text("hello")).await?.run;
/// let mut watch = client.runs().watch(&run.run_id);
/// while let Some(event) = watch.next().await {
///     if let EventPayload::OutputDelta { text } = event?.payload {
///         print!("{text}");
///     }
/// }
/// assert!(watch.is_complete());
/// let cursor = watch.last_sequence(); // store it to resume with watch_after
/// # assert!(cursor > 0);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "embedded"))]
/// # fn main() {}
/// ```
pub struct Watch {
    inner: BoxStream<'static, Result<RunEvent>>,
    progress: Arc<Progress>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("last_sequence", &self.last_sequence())
            .field("reconnects", &self.reconnects())
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl Watch {
    pub(crate) fn new(calls: Calls, run_id: &str, after_sequence: u64) -> Watch {
        let progress = Arc::new(Progress::default());
        progress.last.store(after_sequence, Ordering::SeqCst);
        if let Err(e) = requests::check_id(run_id, "run_id") {
            return Watch {
                inner: Box::pin(stream::once(async move { Err(e) })),
                progress,
            };
        }
        let options = calls.options();
        let core = WatchCore::new(
            run_id,
            after_sequence,
            *options.retry(),
            options.replay_window_events(),
            options.replay_window_bytes(),
        );
        let driver = Driver {
            calls,
            core,
            stream: None,
            resume_after: after_sequence,
            progress: progress.clone(),
            done: false,
        };
        let inner = stream::unfold(driver, |mut d| async move {
            let item = d.next().await?;
            Some((item, d))
        });
        Watch {
            inner: Box::pin(inner),
            progress,
        }
    }

    /// The sequence of the last delivered event (or the starting cursor): store it, and a
    /// later [`Runs::watch_after`](crate::Runs::watch_after) resumes after it.
    pub fn last_sequence(&self) -> u64 {
        self.progress.last.load(Ordering::SeqCst)
    }

    /// How many times the watch reconnected.
    pub fn reconnects(&self) -> u64 {
        self.progress.reconnects.load(Ordering::SeqCst)
    }

    /// Whether the watch proved it saw the whole run.
    pub fn is_complete(&self) -> bool {
        self.progress.completed.load(Ordering::SeqCst)
    }

    /// The run the closing GetRun confirmed terminal at the last delivered sequence,
    /// once the watch is complete.
    pub fn final_run(&self) -> Option<Run> {
        self.progress
            .final_run
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Calls `hook` before each reconnect (after the delay is chosen, before it is
    /// waited). The hook runs on the task polling the watch: keep it short.
    ///
    /// ```
    /// # #[cfg(feature = "embedded")]
    /// # fn demo(client: &colossus_sdk::Client) {
    /// let watch = client.runs().watch("run_1").on_reconnect(|info| {
    ///     eprintln!("reconnect {} after sequence {}", info.attempt, info.after_sequence);
    /// });
    /// # drop(watch);
    /// # }
    /// ```
    pub fn on_reconnect(self, hook: impl Fn(&ReconnectInfo<'_>) + Send + Sync + 'static) -> Self {
        *self
            .progress
            .on_reconnect
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Box::new(hook));
        self
    }
}

impl Stream for Watch {
    type Item = Result<RunEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

struct Driver {
    calls: Calls,
    core: WatchCore<Vec<u8>>,
    stream: Option<BoxStream<'static, Result<WatchedEvent>>>,
    /// Where the next (re)open starts: the caller's cursor, then each reconnect plan's.
    resume_after: u64,
    progress: Arc<Progress>,
    done: bool,
}

impl Driver {
    /// The next delivered event, the one final error, or `None` once complete.
    async fn next(&mut self) -> Option<Result<RunEvent>> {
        if self.done {
            return None;
        }
        let item = self.step().await;
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
            self.stream = None;
        }
        item
    }

    async fn step(&mut self) -> Option<Result<RunEvent>> {
        loop {
            let Some(stream) = self.stream.as_mut() else {
                if let Err(e) = self.open().await {
                    return Some(Err(e));
                }
                continue;
            };
            let received = match self.calls.options().watch_idle_timeout() {
                None => stream.next().await,
                Some(idle) => match tokio::time::timeout(idle, stream.next()).await {
                    Ok(item) => item,
                    Err(_) => {
                        return Some(Err(Error::local(
                            Kind::WatchIdleTimeout,
                            reasons::WATCH_IDLE_TIMEOUT,
                            format!("no event for {idle:?}"),
                        )));
                    }
                },
            };
            match received {
                Some(Ok(watched)) => {
                    let WatchedEvent { event, content } = watched;
                    let size = EVENT_OVERHEAD + content.len();
                    let verdict = self.core.on_event(
                        &event.run_id,
                        event.sequence,
                        content,
                        size,
                        event.is_terminal(),
                    );
                    match verdict {
                        Ok(Verdict::Deliver) => {
                            self.progress.last.store(event.sequence, Ordering::SeqCst);
                            return Some(Ok(event));
                        }
                        Ok(Verdict::Drop) => {}
                        Err(e) => return Some(Err(e)),
                    }
                }
                Some(Err(e)) => {
                    self.stream = None;
                    if let Err(e) = self.after_failure(e).await {
                        return Some(Err(e));
                    }
                }
                None => {
                    self.stream = None;
                    match self.reconcile().await {
                        Ok(true) => return None,
                        Ok(false) => {}
                        Err(e) => return Some(Err(e)),
                    }
                }
            }
        }
    }

    async fn open(&mut self) -> Result<()> {
        let backend = self.calls.backend()?;
        let opened = backend
            .watch_run(self.core.run_id(), self.resume_after)
            .await;
        match opened {
            Ok(stream) => {
                self.stream = Some(stream);
                Ok(())
            }
            Err(e) => self.after_failure(e).await,
        }
    }

    /// Reconnects after an explicitly retryable failure, or fails with it.
    async fn after_failure(&mut self, err: Error) -> Result<()> {
        if !err.is_retryable_read() {
            return Err(err);
        }
        let reached = err.reason() != Some(reasons::UNREACHABLE);
        match self.core.on_retryable_failure(reached, Instant::now()) {
            Some(plan) => {
                self.resume_after = plan.after_sequence;
                self.pause(plan.delay, plan.attempt, Some(&err)).await;
                Ok(())
            }
            // The last failure is the one to report (docs/requirements.md, S9).
            None => Err(err),
        }
    }

    /// A clean close: `Ok(true)` when GetRun proves the watch complete, `Ok(false)` after
    /// pausing to resume a still-running run.
    async fn reconcile(&mut self) -> Result<bool> {
        // The core, not GetRun's own check, judges a run other than the watched one: a
        // clean close it contradicts is WATCH_RECONCILE_MISMATCH in every SDK.
        let run = self.calls.read_run(self.core.run_id(), None).await?;
        match self.core.on_clean_close(&run)? {
            CloseAction::Complete => {
                *self
                    .progress
                    .final_run
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(run);
                self.progress.completed.store(true, Ordering::SeqCst);
                Ok(true)
            }
            CloseAction::Resume => match self.core.on_retryable_failure(true, Instant::now()) {
                Some(plan) => {
                    self.resume_after = plan.after_sequence;
                    self.pause(plan.delay, plan.attempt, None).await;
                    Ok(false)
                }
                None => Err(exhausted()),
            },
        }
    }

    async fn pause(&mut self, delay: Duration, attempt: u32, cause: Option<&Error>) {
        self.progress.reconnects.fetch_add(1, Ordering::SeqCst);
        {
            let hook = self
                .progress
                .on_reconnect
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some(hook) = hook.as_ref() {
                hook(&ReconnectInfo {
                    run_id: self.core.run_id(),
                    attempt,
                    delay,
                    after_sequence: self.resume_after,
                    cause,
                });
            }
        }
        tracing::info!(
            run_id = self.core.run_id(),
            after_sequence = self.resume_after,
            attempt,
            ?delay,
            cause = cause.map(|e| e.to_string()),
            "watch reconnecting"
        );
        tokio::time::sleep(delay).await;
    }
}

/// The budget ran out after clean closes only: with no failure to report, say so.
fn exhausted() -> Error {
    Error::local(
        Kind::Transport,
        reasons::WATCH_RECONNECTS_EXHAUSTED,
        "the watch kept closing before the run ended",
    )
}
