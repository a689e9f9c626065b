//! [`RunWatch`]: one run's ordered feed as renderer frames, with text deltas coalesced and
//! the selection epoch checked before every frame (B4, B11).

use colossus_sdk::Watch;
use colossus_sdk::model::RunEvent;
use futures_util::{FutureExt, StreamExt};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, watch};

use crate::dto::EventDto;
use crate::manager::Selection;
use crate::{BridgeError, TargetId};

/// The most text one frame carries, in bytes, before a new frame starts.
pub const MAX_TEXT_FRAME_BYTES: usize = 16 * 1024;

/// One frame of a watch, in sequence order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "frame", rename_all = "snake_case")]
pub enum WatchFrame {
    /// Consecutive text deltas, joined.
    Text {
        /// The first delta's sequence (decimal string).
        first_sequence: String,
        /// The last delta's sequence (decimal string): resume after it.
        last_sequence: String,
        /// The text.
        text: String,
    },
    /// Any other event.
    Event {
        /// Its sequence (decimal string).
        sequence: String,
        /// The event.
        event: EventDto,
    },
    /// The watch is over; no frame follows.
    End {
        /// Why.
        reason: WatchEnd,
        /// What failed, for [`WatchEnd::Failed`].
        error: Option<BridgeError>,
    },
}

/// Why a watch ended.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchEnd {
    /// The run is terminal and every event was delivered.
    Completed,
    /// The Work selection changed (or its target reconnected or was removed).
    SelectionChanged,
    /// The watch failed.
    Failed,
    /// The renderer or its window went away.
    Stopped,
}

enum Pending {
    Event(Box<RunEvent>),
    Error(colossus_sdk::Error),
    Done,
}

/// One run's watch, bound to its target and to the selection epoch it started in. Pull
/// frames with [`next_frame`](Self::next_frame) until it returns `None`; dropping it ends
/// the watch (never the run) and frees the target's watch slot.
pub struct RunWatch {
    target: TargetId,
    epoch: u64,
    stream: Watch,
    selection: watch::Receiver<Selection>,
    pending: Option<Pending>,
    ended: bool,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for RunWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunWatch")
            .field("target", &self.target)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl RunWatch {
    pub(crate) fn new(
        target: TargetId,
        epoch: u64,
        stream: Watch,
        selection: watch::Receiver<Selection>,
        permit: OwnedSemaphorePermit,
    ) -> RunWatch {
        RunWatch {
            target,
            epoch,
            stream,
            selection,
            pending: None,
            ended: false,
            _permit: permit,
        }
    }

    fn current(&self) -> bool {
        let s = self.selection.borrow();
        s.epoch == self.epoch && s.target.as_ref() == Some(&self.target)
    }

    fn end(&mut self, reason: WatchEnd, error: Option<BridgeError>) -> Option<WatchFrame> {
        self.ended = true;
        Some(WatchFrame::End { reason, error })
    }

    /// The next frame, or `None` after the end frame. Every frame is checked against the
    /// selection epoch just before it is returned: once the selection moved on, the next
    /// frame is `End { selection_changed }`, whatever the old target had sent.
    pub async fn next_frame(&mut self) -> Option<WatchFrame> {
        if self.ended {
            return None;
        }
        let item = match self.pending.take() {
            Some(p) => p,
            None => loop {
                if !self.current() {
                    return self.end(WatchEnd::SelectionChanged, None);
                }
                tokio::select! {
                    biased;
                    changed = self.selection.changed() => {
                        if changed.is_err() {
                            return self.end(WatchEnd::SelectionChanged, None);
                        }
                    }
                    next = self.stream.next() => break pending(next),
                }
            },
        };
        if !self.current() {
            return self.end(WatchEnd::SelectionChanged, None);
        }
        match item {
            Pending::Done => self.end(WatchEnd::Completed, None),
            Pending::Error(e) => self.end(WatchEnd::Failed, Some(BridgeError::from(e))),
            Pending::Event(event) => match event.output_text() {
                Some(text) => Some(self.coalesce(event.sequence, text.to_owned())),
                None => Some(WatchFrame::Event {
                    sequence: event.sequence.to_string(),
                    event: EventDto::new(&event).unwrap_or(EventDto::Unknown),
                }),
            },
        }
    }

    /// Joins the text deltas that are already waiting (without waiting for more) into one
    /// frame of at most [`MAX_TEXT_FRAME_BYTES`]; whatever else is waiting is kept for the
    /// next frame, so order is preserved.
    fn coalesce(&mut self, first: u64, mut text: String) -> WatchFrame {
        let mut last = first;
        while text.len() < MAX_TEXT_FRAME_BYTES {
            let Some(next) = self.stream.next().now_or_never() else {
                break;
            };
            match pending(next) {
                Pending::Event(e)
                    if e.output_text()
                        .is_some_and(|t| text.len() + t.len() <= MAX_TEXT_FRAME_BYTES) =>
                {
                    text.push_str(e.output_text().unwrap_or_default());
                    last = e.sequence;
                }
                other => {
                    self.pending = Some(other);
                    break;
                }
            }
        }
        WatchFrame::Text {
            first_sequence: first.to_string(),
            last_sequence: last.to_string(),
            text,
        }
    }
}

fn pending(next: Option<colossus_sdk::Result<RunEvent>>) -> Pending {
    match next {
        Some(Ok(event)) => Pending::Event(Box::new(event)),
        Some(Err(e)) => Pending::Error(e),
        None => Pending::Done,
    }
}
