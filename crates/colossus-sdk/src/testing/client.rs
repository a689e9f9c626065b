//! Client-side helpers the tests share: options whose retries wait milliseconds, and a
//! watch read to its end.

use std::time::Duration;

use futures_util::StreamExt;

use crate::Error;
use crate::options::{ClientOptions, RetryPolicy};
use crate::watch::stream::Watch;

/// Options whose retry policy makes `max_attempts` attempts, 1-2 ms apart.
pub(crate) fn fast_retries(max_attempts: u32) -> ClientOptions {
    ClientOptions::builder()
        .retry(
            RetryPolicy::builder()
                .initial_backoff(Duration::from_millis(1))
                .max_backoff(Duration::from_millis(2))
                .max_attempts(max_attempts)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
}

/// Reads `watch` to its end: the delivered sequences, the error it ended with, and the
/// watch itself (for its cursor and reconnects). One that ends cleanly must be complete.
pub(crate) async fn drain(mut watch: Watch) -> (Vec<u64>, Option<Error>, Watch) {
    let mut seen = Vec::new();
    while let Some(item) = watch.next().await {
        match item {
            Ok(e) => seen.push(e.sequence),
            Err(e) => return (seen, Some(e), watch),
        }
    }
    assert!(watch.is_complete());
    (seen, None, watch)
}
