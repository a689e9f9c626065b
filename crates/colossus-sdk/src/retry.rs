//! The retry budget of reads and watch reconnects ([`Backoff`], no I/O), and the one loop
//! that spends it on a read ([`read_with_retries`]): connect, GetServerInfo and the
//! client's reads all retry through it.

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
mod tests {
    use super::*;

    fn policy(attempts: u32, elapsed: Option<Duration>) -> RetryPolicy {
        RetryPolicy::builder()
            .max_attempts(attempts)
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(300))
            .max_elapsed(elapsed)
            .build()
            .unwrap()
    }

    #[test]
    fn attempts_bound_the_retries_and_delays_grow_to_the_cap() {
        let mut b = Backoff::without_jitter(policy(4, None));
        let t = Instant::now();
        assert_eq!(b.next(true, t), Some(Duration::from_millis(100)));
        assert_eq!(b.next(true, t), Some(Duration::from_millis(200)));
        assert_eq!(b.next(true, t), Some(Duration::from_millis(300)));
        assert_eq!(b.next(true, t), None);
    }

    #[test]
    fn elapsed_time_bounds_the_retries_even_when_nothing_reached_the_worker() {
        let mut b = Backoff::without_jitter(policy(2, Some(Duration::from_secs(1))));
        let t = Instant::now();
        for _ in 0..50 {
            assert!(b.next(false, t).is_some(), "unreachable spends no attempt");
        }
        let late = b.next(false, t + Duration::from_millis(950)).unwrap();
        assert!(
            late <= Duration::from_millis(50),
            "capped by what is left: {late:?}"
        );
        assert_eq!(b.next(false, t + Duration::from_secs(1)), None);
    }

    #[test]
    fn reset_starts_a_fresh_budget() {
        let mut b = Backoff::without_jitter(policy(2, None));
        let t = Instant::now();
        assert!(b.next(true, t).is_some());
        assert!(b.next(true, t).is_none());
        b.reset();
        assert!(b.next(true, t).is_some());
    }

    #[test]
    fn one_attempt_means_no_retry() {
        let mut b = Backoff::new(RetryPolicy::none());
        assert_eq!(b.next(true, Instant::now()), None);
    }
}
