//! The opt-in create retry under the worker's create rate limit: how long to wait before
//! sending a refused create again with the same key
//! ([`ClientOptions::rate_limit_retries`](crate::options::ClientOptions::rate_limit_retries)).

use crate::Error;
use crate::model::ServerInfo;

/// How long to wait before sending a rate-limited create again: the worker's
/// `RetryInfo`, else one refill period of the slower advertised create bucket, else 1 s.
pub(crate) fn delay(err: &Error, info: &ServerInfo) -> std::time::Duration {
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
