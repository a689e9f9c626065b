//! The retry budget of reads and watch reconnects ([`Backoff`], no I/O), and the one loop
//! that spends it on a read ([`read_with_retries`]; [`connect_with_retries`] for the
//! connect and its GetServerInfo): connect, GetServerInfo and the client's reads all retry
//! through it.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::options::RetryPolicy;
use crate::{Result, reasons};

/// Runs `attempt` until it succeeds, fails with an error a read may not retry (anything but
/// an `UNAVAILABLE` transport failure), or `policy` is spent; then the last error is
/// returned. A worker that cannot be reached at all spends time but no attempt.
pub(crate) async fn read_with_retries<T, F, Fut>(
    what: &'static str,
    policy: RetryPolicy,
    attempt: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    retry_loop(what, policy, true, attempt).await
}

/// As [`read_with_retries`], except that a refused connection (`UNREACHABLE`: nothing
/// listens) ends the loop at once, as a connect does in every SDK: the caller hears it now,
/// and a sidecar's connect sees its worker's exit and restarts it (S7) instead of waiting
/// out the elapsed budget.
pub(crate) async fn connect_with_retries<T, F, Fut>(
    what: &'static str,
    policy: RetryPolicy,
    attempt: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    retry_loop(what, policy, false, attempt).await
}

async fn retry_loop<T, F, Fut>(
    what: &'static str,
    policy: RetryPolicy,
    retry_unreachable: bool,
    mut attempt: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut budget = Backoff::new(policy);
    loop {
        let err = match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if !err.is_retryable_read() {
            return Err(err);
        }
        let reached_worker = err.reason() != Some(reasons::UNREACHABLE);
        if !reached_worker && !retry_unreachable {
            return Err(err);
        }
        let Some(delay) = budget.next(reached_worker, Instant::now()) else {
            return Err(err);
        };
        tracing::info!(call = what, ?delay, "retrying read");
        tokio::time::sleep(delay).await;
    }
}

/// While the worker cannot be reached at all (it is restarting) retries spend no attempt,
/// so their delay ceiling stops growing at one second.
const UNREACHABLE_CEILING: Duration = Duration::from_secs(1);

/// One budget in progress.
#[derive(Debug)]
pub(crate) struct Backoff {
    policy: RetryPolicy,
    /// Failures that reached the worker, after the first call.
    attempt: u32,
    started: Option<Instant>,
    ceiling: Duration,
    jitter: fn(Duration) -> Duration,
}

impl Backoff {
    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Backoff {
            policy,
            attempt: 0,
            started: None,
            ceiling: Duration::ZERO,
            jitter: full_jitter,
        }
    }

    #[cfg(test)]
    pub(crate) fn without_jitter(policy: RetryPolicy) -> Self {
        Backoff {
            jitter: |d| d,
            ..Backoff::new(policy)
        }
    }

    /// The delay before the next retry, or `None` when a budget is spent.
    /// `reached_worker == false` (the connection was refused) spends time but no attempt.
    pub(crate) fn next(&mut self, reached_worker: bool, now: Instant) -> Option<Duration> {
        let started = *self.started.get_or_insert_with(|| {
            self.ceiling = self.policy.initial_backoff();
            now
        });
        let elapsed = now.saturating_duration_since(started);
        if self.policy.max_elapsed().is_some_and(|max| elapsed >= max) {
            return None;
        }
        if reached_worker && self.attempt + 1 >= self.policy.max_attempts() {
            return None;
        }
        let mut delay = (self.jitter)(self.ceiling.min(self.policy.max_backoff()));
        if let Some(max) = self.policy.max_elapsed() {
            delay = delay.min(max - elapsed);
        }
        let grown = self.ceiling.mul_f64(self.policy.multiplier());
        if reached_worker {
            self.attempt += 1;
            self.ceiling = grown;
        } else {
            self.ceiling = grown.min(UNREACHABLE_CEILING);
        }
        Some(delay)
    }

    /// Starts a fresh budget (after progress).
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
        self.started = None;
    }
}

/// Uniform in `[0, ceiling]`.
fn full_jitter(ceiling: Duration) -> Duration {
    let nanos = ceiling.as_nanos().min(u64::MAX as u128) as u64;
    if nanos == 0 {
        return Duration::ZERO;
    }
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return ceiling;
    }
    Duration::from_nanos(u64::from_le_bytes(b) % (nanos + 1))
}

#[cfg(test)]
mod tests;
