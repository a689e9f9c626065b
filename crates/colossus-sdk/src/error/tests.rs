use super::*;
use crate::reasons;

#[test]
fn kinds_nest_like_the_other_sdks_hierarchies() {
    assert!(Kind::CapabilityMissing.is_a(Kind::FailedPrecondition));
    assert!(Kind::CapabilityMissing.is_a(Kind::Api));
    assert!(Kind::WatchGap.is_a(Kind::ProtocolViolation));
    assert!(!Kind::OutcomeUnknown.is_a(Kind::Transport));
    assert!(!Kind::Trust.is_a(Kind::PinMismatch));
}

#[test]
fn display_names_code_reason_metadata_and_key() {
    let err = Error::status(
        Kind::NotFound,
        Code::NotFound,
        Some(reasons::RUN_NOT_FOUND.into()),
        "no run",
    )
    .with_metadata("run_id", "r1")
    .with_idempotency_key("k1");
    assert_eq!(
        err.to_string(),
        "colossus: not found: no run (code=NOT_FOUND; reason=RUN_NOT_FOUND; metadata=run_id=r1; idempotency_key=k1)"
    );
}

#[test]
fn an_error_is_one_pointer_wide() {
    assert_eq!(size_of::<Error>(), size_of::<usize>());
}

#[test]
fn only_unavailable_transport_failures_are_retryable() {
    let unavailable = Error::status(Kind::Transport, Code::Unavailable, None, "down");
    assert!(unavailable.is_retryable());
    let outcome = Error::status(Kind::Transport, Code::Unavailable, None, "cut")
        .with_kind(Kind::OutcomeUnknown);
    assert!(!outcome.is_retryable());
    let refused = Error::status(
        Kind::ResourceExhausted,
        Code::ResourceExhausted,
        None,
        "busy",
    );
    assert!(!refused.is_retryable());
    let rate_limited = Error::status(
        Kind::ResourceExhausted,
        Code::ResourceExhausted,
        Some(reasons::CREATE_RATE_LIMIT.into()),
        "slow down",
    );
    assert!(rate_limited.is_retryable() && !rate_limited.is_retryable_read());
}
