use super::*;
use crate::model::RunStatus;

type Core = WatchCore<&'static str>;

fn core(after: u64) -> Core {
    core_with(after, 1024, 1 << 20, RetryPolicy::default())
}

fn core_with(after: u64, events: usize, bytes: usize, policy: RetryPolicy) -> Core {
    WatchCore::with_budget("r1", after, Backoff::without_jitter(policy), events, bytes)
}

fn reason(err: Error) -> String {
    err.reason().unwrap_or_default().to_owned()
}

#[test]
fn delivers_in_order_and_drops_exact_replays() {
    let mut c = core(0);
    assert_eq!(
        c.on_event("r1", 1, "a", 1, false).unwrap(),
        Verdict::Deliver
    );
    assert_eq!(
        c.on_event("r1", 2, "b", 1, false).unwrap(),
        Verdict::Deliver
    );
    assert_eq!(c.on_event("r1", 1, "a", 1, false).unwrap(), Verdict::Drop);
    assert_eq!(c.on_event("r1", 2, "b", 1, false).unwrap(), Verdict::Drop);
    assert_eq!(c.on_event("r1", 3, "c", 1, true).unwrap(), Verdict::Deliver);
    assert_eq!(c.last_sequence(), 3);
    assert!(c.finished());
    assert_eq!(c.on_event("r1", 3, "c", 1, true).unwrap(), Verdict::Drop);
}

#[test]
fn an_altered_replay_fails() {
    let mut c = core(0);
    c.on_event("r1", 1, "a", 1, false).unwrap();
    let err = c.on_event("r1", 1, "A", 1, false).unwrap_err();
    assert!(err.is(Kind::ProtocolViolation));
    assert_eq!(reason(err), reasons::WATCH_REPLAY_ALTERED);
}

#[test]
fn a_replay_behind_the_count_window_is_unverifiable() {
    let mut c = core_with(0, 2, 1 << 20, RetryPolicy::default());
    for (seq, content) in [(1, "a"), (2, "b"), (3, "c")] {
        c.on_event("r1", seq, content, 1, false).unwrap();
    }
    assert_eq!(c.on_event("r1", 2, "b", 1, false).unwrap(), Verdict::Drop);
    let err = c.on_event("r1", 1, "a", 1, false).unwrap_err();
    assert_eq!(reason(err), reasons::WATCH_REPLAY_UNVERIFIABLE);
}

#[test]
fn the_byte_bound_evicts_old_events_but_keeps_the_newest() {
    let mut c = core_with(0, 100, 10, RetryPolicy::default());
    c.on_event("r1", 1, "a", 6, false).unwrap();
    c.on_event("r1", 2, "b", 6, false).unwrap(); // 12 > 10: 1 leaves
    assert_eq!(
        reason(c.on_event("r1", 1, "a", 6, false).unwrap_err()),
        reasons::WATCH_REPLAY_UNVERIFIABLE
    );
    c.on_event("r1", 3, "c", 50, false).unwrap(); // alone over the bound, still kept
    assert_eq!(c.on_event("r1", 3, "c", 50, false).unwrap(), Verdict::Drop);
    assert_eq!(
        reason(c.on_event("r1", 2, "b", 6, false).unwrap_err()),
        reasons::WATCH_REPLAY_UNVERIFIABLE
    );
}

#[test]
fn a_replay_before_a_resumed_cursor_is_unverifiable() {
    let mut c = core(10);
    let err = c.on_event("r1", 10, "x", 1, false).unwrap_err();
    assert_eq!(reason(err), reasons::WATCH_REPLAY_UNVERIFIABLE);
}

#[test]
fn a_gap_fails_with_the_expected_and_received_sequences() {
    let mut c = core(0);
    c.on_event("r1", 1, "a", 1, false).unwrap();
    let err = c.on_event("r1", 3, "c", 1, false).unwrap_err();
    assert!(err.is(Kind::WatchGap) && err.is(Kind::ProtocolViolation));
    assert_eq!(err.reason(), Some(reasons::WATCH_GAP));
    assert_eq!(err.metadata()["expected"], "2");
    assert_eq!(err.metadata()["received"], "3");
}

#[test]
fn a_first_event_other_than_one_is_a_gap() {
    let mut c = core(0);
    assert_eq!(
        reason(c.on_event("r1", 2, "b", 1, false).unwrap_err()),
        reasons::WATCH_GAP
    );
}

#[test]
fn another_runs_event_fails() {
    let mut c = core(0);
    assert_eq!(
        reason(c.on_event("r2", 1, "a", 1, false).unwrap_err()),
        reasons::WATCH_WRONG_RUN
    );
}

#[test]
fn an_event_after_the_terminal_one_fails() {
    let mut c = core(0);
    c.on_event("r1", 1, "end", 1, true).unwrap();
    assert_eq!(
        reason(c.on_event("r1", 2, "b", 1, false).unwrap_err()),
        reasons::WATCH_AFTER_TERMINAL
    );
}

#[test]
fn sequences_use_the_full_u64_range() {
    let mut c = core(u64::MAX - 2);
    c.on_event("r1", u64::MAX - 1, "a", 1, false).unwrap();
    c.on_event("r1", u64::MAX, "b", 1, true).unwrap();
    assert_eq!(c.last_sequence(), u64::MAX);
    assert_eq!(
        c.on_event("r1", u64::MAX, "b", 1, true).unwrap(),
        Verdict::Drop
    );
    assert_eq!(
        c.on_event("r1", u64::MAX - 1, "a", 1, false).unwrap(),
        Verdict::Drop
    );
    assert_eq!(
        reason(c.on_event("r1", 0, "z", 1, false).unwrap_err()),
        reasons::WATCH_REPLAY_UNVERIFIABLE
    );
}

fn run(status: RunStatus, last: u64) -> Run {
    let mut r = Run::new("r1", status);
    r.last_sequence = last;
    r
}

#[test]
fn a_clean_close_completes_only_at_the_terminal_cursor() {
    let mut c = core(0);
    c.on_event("r1", 1, "a", 1, false).unwrap();
    c.on_event("r1", 2, "end", 1, true).unwrap();
    assert_eq!(
        c.on_clean_close(&run(RunStatus::Succeeded, 2)).unwrap(),
        CloseAction::Complete
    );
    let err = c.on_clean_close(&run(RunStatus::Succeeded, 3)).unwrap_err();
    assert_eq!(err.reason(), Some(reasons::WATCH_RECONCILE_MISMATCH));
    assert_eq!(err.metadata()["delivered"], "2");
    assert_eq!(
        reason(c.on_clean_close(&run(RunStatus::Running, 2)).unwrap_err()),
        reasons::WATCH_RECONCILE_MISMATCH
    );
}

#[test]
fn a_clean_close_of_a_running_run_resumes_and_contradictions_fail() {
    let mut c = core(0);
    c.on_event("r1", 1, "a", 1, false).unwrap();
    assert_eq!(
        c.on_clean_close(&run(RunStatus::Running, 1)).unwrap(),
        CloseAction::Resume
    );
    assert_eq!(
        c.on_clean_close(&run(RunStatus::Running, 5)).unwrap(),
        CloseAction::Resume
    );
    assert_eq!(
        reason(c.on_clean_close(&run(RunStatus::Running, 0)).unwrap_err()),
        reasons::WATCH_RECONCILE_MISMATCH
    );
    let mut other = run(RunStatus::Running, 1);
    other.run_id = "r2".into();
    assert_eq!(
        reason(c.on_clean_close(&other).unwrap_err()),
        reasons::WATCH_RECONCILE_MISMATCH
    );
    // A terminal run whose cursor is ahead of what was delivered: events are missing.
    assert_eq!(
        reason(c.on_clean_close(&run(RunStatus::Failed, 4)).unwrap_err()),
        reasons::WATCH_RECONCILE_MISMATCH
    );
}

#[test]
fn reconnects_are_bounded_by_attempts_and_progress_restores_the_budget() {
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .max_elapsed(None)
        .build()
        .unwrap();
    let mut c = core_with(0, 16, 1 << 20, policy);
    let t = Instant::now();
    let first = c.on_retryable_failure(true, t).unwrap();
    assert_eq!((first.attempt, first.after_sequence), (1, 0));
    assert_eq!(c.on_retryable_failure(true, t).unwrap().attempt, 2);
    assert!(
        c.on_retryable_failure(true, t).is_none(),
        "3 attempts spent"
    );
    c.on_event("r1", 1, "a", 1, false).unwrap();
    let again = c.on_retryable_failure(true, t).unwrap();
    assert_eq!((again.attempt, again.after_sequence), (1, 1));
}

#[test]
fn reconnects_are_bounded_by_elapsed_time_while_unreachable() {
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .max_elapsed(Some(Duration::from_secs(20)))
        .build()
        .unwrap();
    let mut c = core_with(0, 16, 1 << 20, policy);
    let t = Instant::now();
    for _ in 0..10 {
        assert!(c.on_retryable_failure(false, t).is_some());
    }
    assert!(
        c.on_retryable_failure(false, t + Duration::from_secs(20))
            .is_none()
    );
}
