//! The embedded runtime's store: its runs with their events, idempotency keys, artifacts,
//! run tasks and armed faults behind one lock (the worker's journal, in memory), and the
//! reads and updates the calls make on it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::stream;
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, oneshot, watch};
use tokio::task::JoinHandle;

use super::faults::Fault;
use crate::backend::{BoxStream, WatchedEvent};
use crate::model::{
    Answer, Artifact, ArtifactManifest, CreateRunRequest, DownloadPart, EventPayload,
    InteractionKind, ListRunsQuery, Run, RunEvent, RunPage, RunStatus,
};
use crate::{Code, Error, Kind, Result, reasons};

const DEFAULT_PAGE_SIZE: usize = 50;
pub(super) const DOWNLOAD_CHUNK: usize = 64 * 1024;

/// The runtime's state behind its one lock.
#[derive(Default)]
pub(super) struct Store {
    state: Mutex<State>,
}

impl Store {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Everything behind the runtime's one lock.
#[derive(Default)]
pub(super) struct State {
    pub(super) runs: HashMap<String, RunState>,
    /// Run IDs, oldest first.
    pub(super) order: Vec<String>,
    pub(super) keys: HashMap<String, (String, CreateRunRequest)>,
    pub(super) artifacts: HashMap<String, (Artifact, Arc<Vec<u8>>)>,
    pub(super) tasks: Vec<JoinHandle<()>>,
    pub(super) closed: bool,
    /// Injected faults, oldest first; each is used by the next call it applies to.
    pub(super) faults: Vec<Fault>,
}

/// One run: its state, its events, and what its program and watches wait on.
pub(super) struct RunState {
    pub(super) run: Run,
    pub(super) events: Vec<RunEvent>,
    pub(super) published: watch::Sender<u64>,
    pub(super) pending: Option<oneshot::Sender<Answer>>,
    pub(super) cancel: Arc<Notify>,
    pub(super) cancel_requested: bool,
}

pub(super) fn new_id(prefix: &str) -> String {
    let mut b = [0u8; 10];
    getrandom::fill(&mut b).expect("the OS random source failed");
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{prefix}_{hex}")
}

pub(super) fn refused(kind: Kind, code: Code, reason: &str, message: impl Into<String>) -> Error {
    Error::status(kind, code, Some(reason.to_owned()), message)
}

fn run_not_found() -> Error {
    refused(
        Kind::NotFound,
        Code::NotFound,
        reasons::RUN_NOT_FOUND,
        "no such run",
    )
}

pub(super) fn closed() -> Error {
    Error::status(
        Kind::Transport,
        Code::Unavailable,
        None,
        "the embedded runtime is closed",
    )
}

impl Store {
    pub(super) fn get(&self, run_id: &str) -> Result<Run> {
        let state = self.lock();
        state
            .runs
            .get(run_id)
            .map(|r| r.run.clone())
            .ok_or_else(run_not_found)
    }

    pub(super) fn list(&self, query: &ListRunsQuery, max_page_size: u32) -> Result<RunPage> {
        let state = self.lock();
        let offset: usize = match query.page_token() {
            None => 0,
            Some(t) => t
                .strip_prefix("o")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| {
                    refused(
                        Kind::InvalidArgument,
                        Code::InvalidArgument,
                        reasons::PAGE_TOKEN_INVALID,
                        "bad page token",
                    )
                })?,
        };
        let size = match query.requested_page_size() {
            0 => DEFAULT_PAGE_SIZE,
            n => (n as usize).min(max_page_size as usize),
        };
        let matching: Vec<&Run> = state
            .order
            .iter()
            .rev()
            .map(|id| &state.runs[id].run)
            .filter(|r| {
                query.status_filter().is_empty() || query.status_filter().contains(&r.status)
            })
            .collect();
        let runs: Vec<Run> = matching
            .iter()
            .skip(offset)
            .take(size)
            .map(|r| (*r).clone())
            .collect();
        let next = offset + runs.len();
        let token = (next < matching.len()).then(|| format!("o{next}"));
        Ok(RunPage::new(runs, token))
    }

    pub(super) fn cancel(&self, run_id: &str) -> Result<Run> {
        let mut state = self.lock();
        let rs = state.runs.get_mut(run_id).ok_or_else(run_not_found)?;
        if !rs.run.status.is_terminal() && !rs.cancel_requested {
            rs.cancel_requested = true;
            let previous = rs.run.status;
            push(
                rs,
                EventPayload::StatusChanged {
                    previous_status: previous,
                    status: RunStatus::Cancelling,
                },
            );
            rs.run.status = RunStatus::Cancelling;
            rs.cancel.notify_one();
        }
        Ok(rs.run.clone())
    }

    pub(super) fn respond(
        &self,
        run_id: &str,
        interaction_id: &str,
        answer: &Answer,
    ) -> Result<Run> {
        let mut state = self.lock();
        let rs = state.runs.get_mut(run_id).ok_or_else(run_not_found)?;
        let Some(pending) = rs
            .run
            .pending_interaction
            .as_ref()
            .filter(|i| i.interaction_id == interaction_id)
        else {
            let resolved = rs.events.iter().any(|e| {
                matches!(&e.payload, EventPayload::InteractionResolved { interaction_id: id, .. } if id == interaction_id)
            });
            return Err(if resolved {
                refused(
                    Kind::FailedPrecondition,
                    Code::FailedPrecondition,
                    reasons::INTERACTION_ALREADY_RESOLVED,
                    "the interaction was already answered",
                )
            } else {
                refused(
                    Kind::NotFound,
                    Code::NotFound,
                    reasons::INTERACTION_NOT_FOUND,
                    "no such interaction",
                )
            });
        };
        let matches = match (&pending.kind, answer) {
            (InteractionKind::Prompt(p), Answer::Prompt { choice }) => p.choices.contains(choice),
            (InteractionKind::Approval(a), Answer::Approval { binding, .. }) => {
                &a.binding == binding
            }
            _ => false,
        };
        if !matches {
            return Err(refused(
                Kind::InvalidArgument,
                Code::InvalidArgument,
                reasons::INTERACTION_ANSWER_MISMATCH,
                "the answer does not echo a displayed choice or the approval binding",
            ));
        }
        if let Some(tx) = rs.pending.take() {
            let _ = tx.send(answer.clone());
        }
        rs.run.pending_interaction = None;
        Ok(rs.run.clone())
    }

    pub(super) fn watch(
        self: &Arc<Self>,
        run_id: &str,
        after: u64,
    ) -> Result<BoxStream<'static, Result<WatchedEvent>>> {
        let rx = {
            let state = self.lock();
            state
                .runs
                .get(run_id)
                .ok_or_else(run_not_found)?
                .published
                .subscribe()
        };
        let rt = self.clone();
        let run_id = run_id.to_owned();
        Ok(Box::pin(stream::unfold(
            (rt, run_id, after, rx),
            |(rt, run_id, cursor, mut rx)| async move {
                loop {
                    {
                        let state = rt.lock();
                        if state.closed {
                            return Some((Err(closed()), (rt.clone(), run_id, u64::MAX, rx)));
                        }
                        let rs = state.runs.get(&run_id)?;
                        if let Some(event) =
                            usize::try_from(cursor).ok().and_then(|i| rs.events.get(i))
                        {
                            let event = event.clone();
                            drop(state);
                            return Some((
                                Ok(WatchedEvent::new(event)),
                                (rt, run_id, cursor + 1, rx),
                            ));
                        }
                        if rs.run.status.is_terminal() {
                            return None; // a clean close: the client reconciles with GetRun
                        }
                    }
                    rx.changed().await.ok()?;
                }
            },
        )))
    }

    pub(super) fn upload(&self, manifest: &ArtifactManifest, data: &[u8]) -> Result<Artifact> {
        let digest: String = Sha256::digest(data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if data.len() as u64 != manifest.size_bytes || digest != manifest.sha256 {
            return Err(refused(
                Kind::InvalidArgument,
                Code::InvalidArgument,
                reasons::ARTIFACT_INTEGRITY_MISMATCH,
                "the bytes differ from the manifest",
            ));
        }
        let mut artifact = Artifact::new(
            new_id("art"),
            manifest.media_type.clone(),
            manifest.size_bytes,
            digest,
        );
        artifact.display_name = manifest.display_name.clone();
        self.lock().artifacts.insert(
            artifact.artifact_id.clone(),
            (artifact.clone(), Arc::new(data.to_vec())),
        );
        Ok(artifact)
    }

    pub(super) fn download(
        &self,
        artifact_id: &str,
    ) -> Result<BoxStream<'static, Result<DownloadPart>>> {
        let (artifact, data) =
            self.lock()
                .artifacts
                .get(artifact_id)
                .cloned()
                .ok_or_else(|| {
                    refused(
                        Kind::NotFound,
                        Code::NotFound,
                        reasons::ARTIFACT_NOT_FOUND,
                        "no such artifact",
                    )
                })?;
        let mut parts = vec![Ok(DownloadPart::Artifact(artifact))];
        parts.extend(
            data.chunks(DOWNLOAD_CHUNK)
                .map(|c| Ok(DownloadPart::Chunk(c.to_vec()))),
        );
        Ok(Box::pin(stream::iter(parts)))
    }
}

/// Appends one event and wakes the watches.
pub(super) fn push(rs: &mut RunState, payload: EventPayload) {
    let sequence = rs.events.len() as u64 + 1;
    let event = RunEvent::new(rs.run.run_id.clone(), sequence, payload);
    rs.run.update_time = event.event_time;
    rs.run.last_sequence = sequence;
    rs.events.push(event);
    rs.published.send_replace(sequence);
}
