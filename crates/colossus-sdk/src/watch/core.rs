//! The watch rules (S1) as a state machine with no I/O: dedup of exact replays in a
//! window bounded by count and bytes, gap and order checks, clean-close reconciliation
//! and the reconnect budget. The driver ([`super::stream`]) feeds it what the stream did
//! and does what it answers. It mirrors the Go SDK's `watchCore` and Python's `WatchCore`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::model::Run;
use crate::options::RetryPolicy;
use crate::retry::Backoff;
use crate::{Error, Kind, Result, reasons};

/// What the driver does with one received event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A new event: hand it to the consumer.
    Deliver,
    /// An exact replay of a delivered event: drop it.
    Drop,
}

/// What the driver does after GetRun reconciled a clean close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseAction {
    /// The run is terminal at exactly the delivered cursor: the watch is complete.
    Complete,
    /// The run is still going: reconnect under the retry policy.
    Resume,
}

/// Reconnect after `delay`, from `after_sequence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resume {
    pub(crate) delay: Duration,
    pub(crate) after_sequence: u64,
    /// 1 for the first reconnect since the last delivered event.
    pub(crate) attempt: u32,
}

/// The watch state of one run. `C` stands for an event's full content (the gRPC backend
/// passes its encoded bytes); two events are the same when their contents are equal.
#[derive(Debug)]
pub(crate) struct WatchCore<C> {
    run_id: String,
    last: u64,
    terminal: bool,
    /// Delivered events `last - len + 1 ..= last` and their sizes, oldest first.
    window: VecDeque<(C, usize)>,
    window_bytes: usize,
    max_events: usize,
    max_bytes: usize,
    budget: Backoff,
    reconnects: u32,
    progressed: bool,
}

impl<C: PartialEq> WatchCore<C> {
    pub(crate) fn new(
        run_id: impl Into<String>,
        after_sequence: u64,
        policy: RetryPolicy,
        max_events: usize,
        max_bytes: usize,
    ) -> Self {
        Self::with_budget(
            run_id,
            after_sequence,
            Backoff::new(policy),
            max_events,
            max_bytes,
        )
    }

    pub(crate) fn with_budget(
        run_id: impl Into<String>,
        after_sequence: u64,
        budget: Backoff,
        max_events: usize,
        max_bytes: usize,
    ) -> Self {
        WatchCore {
            run_id: run_id.into(),
            last: after_sequence,
            terminal: false,
            window: VecDeque::new(),
            window_bytes: 0,
            max_events: max_events.max(1),
            max_bytes,
            budget,
            reconnects: 0,
            progressed: false,
        }
    }

    /// The cursor of the last delivered event (the driver takes it from each `Resume`).
    #[cfg(test)]
    pub(crate) fn last_sequence(&self) -> u64 {
        self.last
    }

    pub(crate) fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whether the terminal event was delivered.
    #[allow(dead_code)]
    pub(crate) fn finished(&self) -> bool {
        self.terminal
    }

    /// Keeps a delivered event; the newest one always stays, however large.
    fn remember(&mut self, content: C, size: usize) {
        if self.window.len() == self.max_events {
            self.evict();
        }
        while !self.window.is_empty() && self.window_bytes + size > self.max_bytes {
            self.evict();
        }
        self.window.push_back((content, size));
        self.window_bytes += size;
    }

    fn evict(&mut self) {
        if let Some((_, size)) = self.window.pop_front() {
            self.window_bytes -= size;
        }
    }

    fn recall(&self, seq: u64) -> Option<&C> {
        let behind = self.last.checked_sub(seq)?;
        let len = self.window.len() as u64;
        if behind >= len {
            return None;
        }
        self.window
            .get((len - 1 - behind) as usize)
            .map(|(content, _)| content)
    }

    /// Classifies one received event; an error ends the watch.
    pub(crate) fn on_event(
        &mut self,
        run_id: &str,
        seq: u64,
        content: C,
        size: usize,
        terminal: bool,
    ) -> Result<Verdict> {
        if run_id != self.run_id {
            return Err(violation(
                reasons::WATCH_WRONG_RUN,
                "the watch delivered an event of another run".into(),
            ));
        }
        if seq <= self.last {
            return match self.recall(seq) {
                None => Err(violation(
                    reasons::WATCH_REPLAY_UNVERIFIABLE,
                    format!(
                        "the watch re-sent sequence {seq}, which cannot be verified (cursor {})",
                        self.last
                    ),
                )),
                Some(seen) if *seen != content => Err(violation(
                    reasons::WATCH_REPLAY_ALTERED,
                    format!("the watch replayed sequence {seq} with different content"),
                )),
                Some(_) => Ok(Verdict::Drop),
            };
        }
        if self.terminal {
            return Err(violation(
                reasons::WATCH_AFTER_TERMINAL,
                "the watch sent an event after the terminal event".into(),
            ));
        }
        // seq > last here, so last + 1 cannot overflow.
        let expected = self.last + 1;
        if seq != expected {
            return Err(Error::local(
                Kind::WatchGap,
                reasons::WATCH_GAP,
                format!("the watch skipped from sequence {} to {seq}", self.last),
            )
            .with_metadata("expected", expected.to_string())
            .with_metadata("received", seq.to_string()));
        }
        self.remember(content, size);
        self.last = seq;
        self.terminal = terminal;
        self.progressed = true;
        Ok(Verdict::Deliver)
    }

    /// A retryable failure, or a clean close of a running run: the next reconnect, or
    /// `None` when the budget is spent. Progress since the previous failure starts a fresh
    /// budget; a failure that never reached the worker spends time but no attempt.
    pub(crate) fn on_retryable_failure(
        &mut self,
        reached_worker: bool,
        now: Instant,
    ) -> Option<Resume> {
        if self.progressed {
            self.progressed = false;
            self.budget.reset();
            self.reconnects = 0;
        }
        let delay = self.budget.next(reached_worker, now)?;
        self.reconnects += 1;
        Some(Resume {
            delay,
            after_sequence: self.last,
            attempt: self.reconnects,
        })
    }

    /// Reconciles a stream that ended cleanly with GetRun's answer: complete only when the
    /// same run is terminal exactly at the delivered cursor; resume when it is still going
    /// and consistent; fail otherwise.
    pub(crate) fn on_clean_close(&self, run: &Run) -> Result<CloseAction> {
        if run.run_id != self.run_id {
            return Err(violation(
                reasons::WATCH_RECONCILE_MISMATCH,
                "GetRun returned another run while reconciling a watch".into(),
            ));
        }
        if run.status.is_terminal() {
            if run.last_sequence == self.last {
                return Ok(CloseAction::Complete);
            }
            return Err(violation(
                reasons::WATCH_RECONCILE_MISMATCH,
                format!(
                    "the watch closed at sequence {} but the run ended at {}",
                    self.last, run.last_sequence
                ),
            )
            .with_metadata("delivered", self.last.to_string())
            .with_metadata("run", run.last_sequence.to_string()));
        }
        if run.last_sequence < self.last || self.terminal {
            return Err(violation(
                reasons::WATCH_RECONCILE_MISMATCH,
                "the run's state contradicts the events the watch delivered".into(),
            ));
        }
        Ok(CloseAction::Resume)
    }
}

fn violation(reason: &str, message: String) -> Error {
    Error::local(Kind::ProtocolViolation, reason, message)
}

#[cfg(test)]
mod tests;
