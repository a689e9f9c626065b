//! [`Fault`]: one-shot misbehaviours the [`EmbeddedRuntime`](super::EmbeddedRuntime)
//! injects into its next matching call, so an application's tests reach its error paths.
//! The same seven faults, under the same names, as the other SDKs' fake workers
//! (Python `colossus_agent_client.testing.Fault`, TypeScript `Fault` from
//! `colossus-sdk/testing`, Go `colossustest`): `drop_watch`, `gap`, `replay`,
//! `unavailable_after_commit`, `fail`, `rate_limit` and `not_started`.

use std::time::Duration;

use futures_util::{StreamExt, stream};

use crate::backend::{BoxStream, WatchedEvent};
use crate::status::{self, CallKind};
use crate::{Code, Result, reasons};

/// A call of the [`Backend`](crate::backend::Backend), named as the contract's RPC.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `SystemService.GetServerInfo`.
    GetServerInfo,
    /// `RunService.CreateRun`.
    CreateRun,
    /// `RunService.GetRun`.
    GetRun,
    /// `RunService.ListRuns`.
    ListRuns,
    /// `RunService.WatchRun`.
    WatchRun,
    /// `RunService.CancelRun`.
    CancelRun,
    /// `RunService.RespondInteraction`.
    RespondInteraction,
    /// `ArtifactService.UploadArtifact`.
    UploadArtifact,
    /// `ArtifactService.DownloadArtifact`.
    DownloadArtifact,
}

impl Method {
    /// Whether the call changes state (its ambiguous failures leave the outcome unknown).
    pub(crate) fn is_mutation(self) -> bool {
        matches!(
            self,
            Method::CreateRun
                | Method::CancelRun
                | Method::RespondInteraction
                | Method::UploadArtifact
        )
    }
}

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    Drop,
    Gap,
    Replay,
    AfterCommit,
    Fail,
    RateLimit,
    NotStarted,
}

/// One injected misbehaviour, used once by the next call it applies to. Build it with
/// the functions below and hand it to
/// [`EmbeddedRuntime::inject`](super::EmbeddedRuntime::inject).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> colossus_sdk::Result<()> {
/// use colossus_sdk::embedded::{EmbeddedRuntime, Fault, Method};
/// use colossus_sdk::{Client, Kind, model::CreateRunRequest};
///
/// let runtime = EmbeddedRuntime::new();
/// let client = Client::embedded(runtime.clone());
/// runtime.inject(Fault::unavailable_after_commit(Method::CreateRun));
/// let request = CreateRunRequest::text("hello");
/// let err = client.runs().create(request.clone()).await.unwrap_err();
/// assert!(err.is(Kind::OutcomeUnknown));
/// // The run was created: the same request, same key, returns it.
/// let again = client.runs().create(request).await?;
/// assert!(again.replayed);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub(crate) method: Method,
    pub(crate) kind: FaultKind,
    pub(crate) after_events: usize,
    pub(crate) code: Code,
    pub(crate) reason: Option<String>,
    pub(crate) retry_delay: Option<Duration>,
}

impl Fault {
    fn new(method: Method, kind: FaultKind) -> Fault {
        Fault {
            method,
            kind,
            after_events: 0,
            code: Code::Unavailable,
            reason: None,
            retry_delay: None,
        }
    }

    /// The next `WatchRun` sends `after_events` events, then fails with `UNAVAILABLE` (a
    /// dropped connection): the watch reconnects from its cursor.
    pub fn drop_watch(after_events: usize) -> Fault {
        Fault {
            after_events,
            ..Fault::new(Method::WatchRun, FaultKind::Drop)
        }
    }

    /// The next `WatchRun` skips one sequence after `after_events` events: the watch fails
    /// with [`Kind::WatchGap`](crate::Kind::WatchGap).
    pub fn gap(after_events: usize) -> Fault {
        Fault {
            after_events,
            ..Fault::new(Method::WatchRun, FaultKind::Gap)
        }
    }

    /// The next `WatchRun` sends its first event again after `after_events` events (1 or
    /// more; identical content): the watch drops the copy.
    pub fn replay(after_events: usize) -> Fault {
        Fault {
            after_events,
            ..Fault::new(Method::WatchRun, FaultKind::Replay)
        }
    }

    /// The next call of `method` takes effect, then fails with `UNAVAILABLE`: a mutation's
    /// outcome is unknown to the client ([`Kind::OutcomeUnknown`](crate::Kind::OutcomeUnknown)),
    /// a read is retried.
    pub fn unavailable_after_commit(method: Method) -> Fault {
        Fault::new(method, FaultKind::AfterCommit)
    }

    /// The next call of `method` fails before doing anything, with `code` and, when
    /// given, an `ErrorInfo` reason (mapped as the client maps a worker's refusal).
    pub fn fail(method: Method, code: Code, reason: Option<&str>) -> Fault {
        Fault {
            code,
            reason: reason.map(str::to_owned),
            ..Fault::new(method, FaultKind::Fail)
        }
    }

    /// The next `CreateRun` is refused as the worker's create rate limit refuses:
    /// `RESOURCE_EXHAUSTED`, reason `CREATE_RATE_LIMIT`, and a retry delay of
    /// `retry_delay`. Nothing is created;
    /// [`ClientOptions::rate_limit_retries`](crate::options::ClientOptions::rate_limit_retries)
    /// retries it.
    pub fn rate_limit(retry_delay: Duration) -> Fault {
        Fault {
            code: Code::ResourceExhausted,
            reason: Some(reasons::CREATE_RATE_LIMIT.to_owned()),
            retry_delay: Some(retry_delay),
            ..Fault::new(Method::CreateRun, FaultKind::RateLimit)
        }
    }

    /// The next `GetRun` answers as if the run had not started yet (`QUEUED` at sequence
    /// 0, no result), as a read that raced the run would:
    /// [`Runs::wait`](crate::Runs::wait) then follows the run's watch to its end.
    pub fn not_started() -> Fault {
        Fault::new(Method::GetRun, FaultKind::NotStarted)
    }

    /// The call it applies to.
    pub fn method(&self) -> Method {
        self.method
    }
}

pub(super) fn call_kind(method: Method) -> CallKind {
    if method.is_mutation() {
        CallKind::Mutation
    } else {
        CallKind::Read
    }
}

/// A call that took effect, then lost its connection under an `unavailable_after_commit`
/// fault.
pub(super) fn after_commit<T>(
    fault: Option<Fault>,
    method: Method,
    result: Result<T>,
) -> Result<T> {
    match (fault, result) {
        (Some(f), Ok(_)) if f.kind == FaultKind::AfterCommit => Err(status::from_parts(
            Code::Unavailable,
            None,
            "connection lost after commit",
            None,
            call_kind(method),
        )),
        (_, result) => result,
    }
}

/// A watch stream under a `drop_watch`, `gap` or `replay` fault, which strikes at the
/// event of index `after_events` (counted from the first event this stream sends).
pub(super) fn faulty_watch(
    inner: BoxStream<'static, Result<WatchedEvent>>,
    fault: Fault,
) -> BoxStream<'static, Result<WatchedEvent>> {
    struct S {
        inner: BoxStream<'static, Result<WatchedEvent>>,
        fault: Fault,
        index: usize,
        first: Option<WatchedEvent>,
        held: Option<WatchedEvent>,
        dropped: bool,
    }
    let start = S {
        inner,
        fault,
        index: 0,
        first: None,
        held: None,
        dropped: false,
    };
    Box::pin(stream::unfold(start, |mut s| async move {
        if s.dropped {
            return None;
        }
        if let Some(held) = s.held.take() {
            return Some((Ok(held), s));
        }
        loop {
            let event = match s.inner.next().await? {
                Ok(event) => event,
                Err(e) => return Some((Err(e), s)),
            };
            let i = s.index;
            s.index += 1;
            if i == 0 {
                s.first = Some(event.clone());
            }
            if i == s.fault.after_events {
                match s.fault.kind {
                    FaultKind::Drop => {
                        s.dropped = true;
                        let err = status::from_parts(
                            Code::Unavailable,
                            None,
                            "connection dropped",
                            None,
                            CallKind::Read,
                        );
                        return Some((Err(err), s));
                    }
                    FaultKind::Gap => continue,
                    FaultKind::Replay if i > 0 => {
                        let first = s.first.clone().expect("the first event was kept");
                        s.held = Some(event);
                        return Some((Ok(first), s));
                    }
                    _ => {}
                }
            }
            return Some((Ok(event), s));
        }
    }))
}

#[cfg(test)]
mod tests;
