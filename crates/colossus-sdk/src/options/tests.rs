use super::*;

#[test]
fn defaults_match_the_go_sdk() {
    let o = ClientOptions::default();
    assert_eq!(o.timeout(), Some(Duration::from_secs(30)));
    assert_eq!(o.connect_timeout(), Duration::from_secs(10));
    assert_eq!(o.max_response_bytes(), 4 * 1024 * 1024);
    assert_eq!(o.watch_idle_timeout(), None);
    let r = o.retry();
    assert_eq!(r.max_attempts(), 5);
    assert_eq!(r.initial_backoff(), Duration::from_millis(100));
    assert_eq!(r.max_backoff(), Duration::from_secs(5));
    assert_eq!(r.multiplier(), 2.0);
    assert_eq!(r.max_elapsed(), Some(Duration::from_secs(30)));
}

#[test]
fn to_builder_starts_from_the_options_it_came_from() {
    let base = ClientOptions::builder()
        .timeout(None)
        .watch_idle_timeout(Some(Duration::from_secs(7)))
        .replay_window_events(3)
        .rate_limit_retries(4)
        .build()
        .unwrap();
    assert_eq!(
        base.to_builder().build().unwrap(),
        base,
        "unchanged round trip"
    );
    let derived = base
        .to_builder()
        .connect_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    assert_eq!(derived.connect_timeout(), Duration::from_secs(2));
    assert_eq!(derived.timeout(), None);
    assert_eq!(derived.watch_idle_timeout(), Some(Duration::from_secs(7)));
    assert_eq!(derived.replay_window_events(), 3);
    assert_eq!(derived.rate_limit_retries(), 4);
    assert_eq!(
        base.connect_timeout(),
        Duration::from_secs(10),
        "the base is untouched"
    );
    // The builder's checks still apply to a derived set.
    assert!(base.to_builder().replay_window_events(0).build().is_err());
}

#[test]
fn a_partial_retry_policy_keeps_the_other_defaults() {
    let p = RetryPolicy::builder()
        .max_elapsed(Some(Duration::from_secs(12)))
        .build()
        .unwrap();
    assert_eq!(p.max_elapsed(), Some(Duration::from_secs(12)));
    assert_eq!(p.max_attempts(), 5);
}

#[test]
fn invalid_fields_are_refused() {
    let err = RetryPolicy::builder().max_attempts(0).build().unwrap_err();
    assert!(err.is(Kind::InvalidArgument));
    assert_eq!(
        err.metadata().get("field").map(String::as_str),
        Some("retry.max_attempts")
    );
    assert!(RetryPolicy::builder().multiplier(0.5).build().is_err());
    assert!(RetryPolicy::builder().multiplier(f64::NAN).build().is_err());
    assert!(
        ClientOptions::builder()
            .connect_timeout(Duration::ZERO)
            .build()
            .is_err()
    );
}

#[test]
fn response_cap_never_exceeds_the_default() {
    let o = ClientOptions::builder()
        .max_response_bytes(64 << 20)
        .build()
        .unwrap();
    assert_eq!(o.max_response_bytes(), DEFAULT_MAX_RESPONSE_BYTES);
}
