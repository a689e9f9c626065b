//! Behaviour every placement shares: [`ClientOptions`] and the [`RetryPolicy`] of reads
//! and watch reconnects. The defaults are the Go, Python and TypeScript SDKs' defaults.

use std::time::Duration;

use crate::{Error, Kind, Result, reasons};

/// The inbound message cap before GetServerInfo answers (4 MiB). It is lowered to the
/// worker's advertised response cap when that is smaller (C7), and is also the ceiling.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Default per-call deadline of unary calls.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default bound of the pre-flight handshake and GetServerInfo.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many delivered events a watch remembers to tell an exact replay from an altered one.
pub const DEFAULT_REPLAY_WINDOW_EVENTS: usize = 1024;

/// How many bytes (encoded size) of delivered events a watch remembers, at most.
pub const DEFAULT_REPLAY_WINDOW_BYTES: usize = 8 << 20;

/// The most [`ClientOptions::rate_limit_retries`] accepts.
pub const MAX_RATE_LIMIT_RETRIES: u32 = 10;

/// Bounds the automatic retries of reads and the reconnects of a watch.
///
/// Only `UNAVAILABLE` is retried, and only for reads (GetServerInfo, GetRun, ListRuns,
/// DownloadArtifact) and watch reconnects; mutations are never retried (S2). Two budgets
/// end the retries, whichever runs out first: [`max_attempts`](Self::max_attempts)
/// calls that reached the worker and failed, and [`max_elapsed`](Self::max_elapsed)
/// since the first failure (for a watch, both start afresh after every delivered event).
/// While the worker cannot be reached at all no attempt is spent, only time. Each delay
/// is "full jitter": uniform between zero and the current ceiling.
///
/// Build one from [`RetryPolicy::builder`]; every field left unset keeps its default.
///
/// ```
/// use std::time::Duration;
/// use colossus_sdk::options::RetryPolicy;
///
/// let policy = RetryPolicy::builder().max_attempts(3).build().unwrap();
/// assert_eq!(policy.max_attempts(), 3);
/// assert_eq!(policy.max_elapsed(), Some(Duration::from_secs(30))); // the default
/// assert_eq!(RetryPolicy::none().max_attempts(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    multiplier: f64,
    max_elapsed: Option<Duration>,
}

impl Default for RetryPolicy {
    /// 5 attempts within 30 s, delays from 100 ms doubling up to 5 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            multiplier: 2.0,
            max_elapsed: Some(Duration::from_secs(30)),
        }
    }
}

impl RetryPolicy {
    /// A builder starting from the defaults.
    pub fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder {
            policy: RetryPolicy::default(),
        }
    }

    /// One attempt: no retries and no watch reconnects.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            multiplier: 1.0,
            max_elapsed: None,
        }
    }

    /// Calls of one read, the first included (1 disables retries); for a watch, the stream
    /// attempts in a row without a newly delivered event. Default 5.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The ceiling of the first delay. Default 100 ms.
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// The cap of every delay. Default 5 s.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// How the ceiling grows per attempt (at least 1). Default 2.
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// The elapsed-time budget from the first failure; `None` means no limit beyond the
    /// attempts. Default 30 s.
    pub fn max_elapsed(&self) -> Option<Duration> {
        self.max_elapsed
    }
}

/// Builds a [`RetryPolicy`]; unset fields keep their defaults.
#[derive(Debug, Clone)]
pub struct RetryPolicyBuilder {
    policy: RetryPolicy,
}

impl RetryPolicyBuilder {
    /// See [`RetryPolicy::max_attempts`]; must be at least 1.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.policy.max_attempts = n;
        self
    }

    /// See [`RetryPolicy::initial_backoff`].
    pub fn initial_backoff(mut self, d: Duration) -> Self {
        self.policy.initial_backoff = d;
        self
    }

    /// See [`RetryPolicy::max_backoff`].
    pub fn max_backoff(mut self, d: Duration) -> Self {
        self.policy.max_backoff = d;
        self
    }

    /// See [`RetryPolicy::multiplier`]; must be finite and at least 1.
    pub fn multiplier(mut self, m: f64) -> Self {
        self.policy.multiplier = m;
        self
    }

    /// See [`RetryPolicy::max_elapsed`]; `None` removes the time budget.
    pub fn max_elapsed(mut self, d: Option<Duration>) -> Self {
        self.policy.max_elapsed = d;
        self
    }

    /// Checks the fields ([`Kind::InvalidArgument`], `FIELD_INVALID`).
    pub fn build(self) -> Result<RetryPolicy> {
        let p = self.policy;
        if p.max_attempts < 1 {
            return Err(invalid(
                "retry.max_attempts",
                "must be at least 1 (1 disables retries)",
            ));
        }
        if !p.multiplier.is_finite() || p.multiplier < 1.0 {
            return Err(invalid("retry.multiplier", "must be finite and at least 1"));
        }
        Ok(p)
    }
}

fn invalid(field: &str, message: &str) -> Error {
    Error::local(
        Kind::InvalidArgument,
        reasons::FIELD_INVALID,
        format!("{field} {message}"),
    )
    .with_metadata("field", field)
}

/// Behaviour every placement shares. [`ClientOptions::default`] is the documented default
/// of every field; [`ClientOptions::builder`] changes any subset of them.
///
/// ```
/// use std::time::Duration;
/// use colossus_sdk::options::{ClientOptions, RetryPolicy};
///
/// let options = ClientOptions::builder()
///     .timeout(Some(Duration::from_secs(5)))
///     .retry(RetryPolicy::none())
///     .build()
///     .unwrap();
/// assert_eq!(options.timeout(), Some(Duration::from_secs(5)));
/// assert_eq!(options.connect_timeout(), Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ClientOptions {
    timeout: Option<Duration>,
    connect_timeout: Duration,
    retry: RetryPolicy,
    max_response_bytes: usize,
    replay_window_events: usize,
    replay_window_bytes: usize,
    watch_idle_timeout: Option<Duration>,
    rate_limit_retries: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Some(DEFAULT_TIMEOUT),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            retry: RetryPolicy::default(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            replay_window_events: DEFAULT_REPLAY_WINDOW_EVENTS,
            replay_window_bytes: DEFAULT_REPLAY_WINDOW_BYTES,
            watch_idle_timeout: None,
            rate_limit_retries: 0,
        }
    }
}

impl ClientOptions {
    /// A builder starting from the defaults.
    pub fn builder() -> ClientOptionsBuilder {
        ClientOptionsBuilder {
            options: ClientOptions::default(),
        }
    }

    /// A builder starting from these options: change a few fields of an existing set
    /// without restating the others.
    ///
    /// ```
    /// use std::time::Duration;
    /// use colossus_sdk::options::ClientOptions;
    ///
    /// let base = ClientOptions::builder().rate_limit_retries(2).build().unwrap();
    /// let quick = base.to_builder().timeout(Some(Duration::from_secs(1))).build().unwrap();
    /// assert_eq!(quick.rate_limit_retries(), 2);
    /// assert_eq!(quick.timeout(), Some(Duration::from_secs(1)));
    /// ```
    pub fn to_builder(&self) -> ClientOptionsBuilder {
        ClientOptionsBuilder {
            options: self.clone(),
        }
    }

    /// The deadline of each unary call (default 30 s; `None`: no deadline). Watches have
    /// no overall deadline; see [`watch_idle_timeout`](Self::watch_idle_timeout).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The bound of the pre-flight handshake and GetServerInfo (default 10 s).
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The policy of reads and watch reconnects (default [`RetryPolicy::default`]).
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The inbound message cap (default and ceiling [`DEFAULT_MAX_RESPONSE_BYTES`]).
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// How many delivered events a watch keeps to verify replays (default 1024).
    pub fn replay_window_events(&self) -> usize {
        self.replay_window_events
    }

    /// How many bytes of delivered events a watch keeps to verify replays (default 8 MiB).
    pub fn replay_window_bytes(&self) -> usize {
        self.replay_window_bytes
    }

    /// How long a watch waits for an event before ending with
    /// [`Kind::WatchIdleTimeout`] (default `None`: forever).
    pub fn watch_idle_timeout(&self) -> Option<Duration> {
        self.watch_idle_timeout
    }

    /// How many times a create refused with `CREATE_RATE_LIMIT` (nothing was created) is
    /// sent again, with the same idempotency key, after the worker's `retry_delay` (or one
    /// refill period of the slower advertised create bucket when it named none). 0 to
    /// [`MAX_RATE_LIMIT_RETRIES`]; default 0. No other refusal is ever retried.
    pub fn rate_limit_retries(&self) -> u32 {
        self.rate_limit_retries
    }
}

/// Builds [`ClientOptions`]; unset fields keep their defaults.
#[derive(Debug, Clone)]
pub struct ClientOptionsBuilder {
    options: ClientOptions,
}

impl ClientOptionsBuilder {
    /// See [`ClientOptions::timeout`].
    pub fn timeout(mut self, d: Option<Duration>) -> Self {
        self.options.timeout = d;
        self
    }

    /// See [`ClientOptions::connect_timeout`]; must not be zero.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.options.connect_timeout = d;
        self
    }

    /// See [`ClientOptions::retry`].
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.options.retry = policy;
        self
    }

    /// See [`ClientOptions::max_response_bytes`]; values above the default are lowered to it.
    pub fn max_response_bytes(mut self, n: usize) -> Self {
        self.options.max_response_bytes = n;
        self
    }

    /// See [`ClientOptions::replay_window_events`]; must be at least 1.
    pub fn replay_window_events(mut self, n: usize) -> Self {
        self.options.replay_window_events = n;
        self
    }

    /// See [`ClientOptions::replay_window_bytes`].
    pub fn replay_window_bytes(mut self, n: usize) -> Self {
        self.options.replay_window_bytes = n;
        self
    }

    /// See [`ClientOptions::watch_idle_timeout`].
    pub fn watch_idle_timeout(mut self, d: Option<Duration>) -> Self {
        self.options.watch_idle_timeout = d;
        self
    }

    /// See [`ClientOptions::rate_limit_retries`].
    pub fn rate_limit_retries(mut self, n: u32) -> Self {
        self.options.rate_limit_retries = n;
        self
    }

    /// Checks the fields ([`Kind::InvalidArgument`], `FIELD_INVALID`).
    pub fn build(self) -> Result<ClientOptions> {
        let mut o = self.options;
        if o.connect_timeout.is_zero() {
            return Err(invalid("connect_timeout", "must not be zero"));
        }
        if o.max_response_bytes == 0 || o.max_response_bytes > DEFAULT_MAX_RESPONSE_BYTES {
            o.max_response_bytes = DEFAULT_MAX_RESPONSE_BYTES;
        }
        if o.rate_limit_retries > MAX_RATE_LIMIT_RETRIES {
            return Err(invalid("rate_limit_retries", "must be between 0 and 10"));
        }
        if o.replay_window_events == 0 {
            return Err(invalid("replay_window_events", "must be at least 1"));
        }
        if o.timeout == Some(Duration::ZERO) {
            o.timeout = None;
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests;
