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

fn refused() -> crate::Error {
    crate::Error::status(
        crate::Kind::Transport,
        crate::Code::Unavailable,
        Some(reasons::UNREACHABLE.to_owned()),
        "nothing listens",
    )
}

/// Fails with a refused connection `refusals` times, then succeeds; counts the calls.
fn refused_then_ok(
    refusals: u32,
    calls: &std::sync::atomic::AtomicU32,
) -> impl FnMut() -> std::future::Ready<Result<()>> + '_ {
    move || {
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::future::ready(if n < refusals { Err(refused()) } else { Ok(()) })
    }
}

#[tokio::test]
async fn a_read_rides_out_refused_connections_but_a_connect_ends_at_the_first() {
    let fast = RetryPolicy::builder()
        .max_attempts(2)
        .initial_backoff(Duration::from_millis(1))
        .max_backoff(Duration::from_millis(2))
        .max_elapsed(Some(Duration::from_secs(30)))
        .build()
        .unwrap();
    let calls = std::sync::atomic::AtomicU32::new(0);
    read_with_retries("read", fast, refused_then_ok(3, &calls))
        .await
        .expect("a refusal spends no attempt of a read");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 4);

    let calls = std::sync::atomic::AtomicU32::new(0);
    let err = connect_with_retries("connect", fast, refused_then_ok(3, &calls))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::UNREACHABLE));
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "nothing listens: the connect says so at once, not after the elapsed budget"
    );
}

#[test]
fn one_attempt_means_no_retry() {
    let mut b = Backoff::new(RetryPolicy::none());
    assert_eq!(b.next(true, Instant::now()), None);
}
