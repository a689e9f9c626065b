//! [`Calls`]: what every call needs, shared by the client and the surfaces that call.
//!
//! `Client` owns one and lends it to [`Runs`](crate::Runs) and
//! [`Artifacts`](crate::Artifacts), and the watch driver keeps a clone: none of them needs
//! `Client` itself, so the client surface imports downwards only.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::Backend;
use crate::model::{Run, ServerInfo};
use crate::options::{ClientOptions, RetryPolicy};
use crate::requests;
use crate::retry::read_with_retries;
use crate::{Code, Error, Kind, Result, reasons};

/// The connection every clone of a client shares.
struct Shared {
    backend: Box<dyn Backend>,
    closed: AtomicBool,
}

/// The backend, whether it was closed, and the options in force; and the three ways a
/// call is made: under the timeout, as a read (retried) or as a mutation (sent once).
/// Cloning is cheap and shares the connection.
#[derive(Clone)]
pub(crate) struct Calls {
    shared: Arc<Shared>,
    options: Arc<ClientOptions>,
}

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calls")
            .field("options", &self.options)
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Calls {
    pub(crate) fn new(backend: Box<dyn Backend>, options: ClientOptions) -> Calls {
        Calls {
            shared: Arc::new(Shared {
                backend,
                closed: AtomicBool::new(false),
            }),
            options: Arc::new(options),
        }
    }

    /// The same connection under other options.
    pub(crate) fn with_options(&self, options: ClientOptions) -> Calls {
        Calls {
            shared: self.shared.clone(),
            options: Arc::new(options),
        }
    }

    pub(crate) fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Closes the backend once, for every clone.
    pub(crate) fn close(&self) {
        if !self.shared.closed.swap(true, Ordering::SeqCst) {
            self.shared.backend.close();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn backend(&self) -> Result<&dyn Backend> {
        if self.is_closed() {
            return Err(Error::local(
                Kind::ClientClosed,
                reasons::CLIENT_CLOSED,
                "the client was closed",
            ));
        }
        Ok(&*self.shared.backend)
    }

    /// What the worker advertises: the capabilities and limits the request checks use.
    pub(crate) async fn server_info(&self) -> Result<ServerInfo> {
        let backend = self.backend()?;
        self.read("GetServerInfo", None, || backend.server_info())
            .await
    }

    /// GetRun as the worker answered it, whichever run it names: a watch reconciling a
    /// clean close judges that itself (`WATCH_RECONCILE_MISMATCH`, as in every SDK).
    pub(crate) async fn read_run(&self, run_id: &str, policy: Option<RetryPolicy>) -> Result<Run> {
        requests::check_id(run_id, "run_id")?;
        let backend = self.backend()?;
        self.read("GetRun", policy, || backend.get_run(run_id))
            .await
    }

    /// Runs one call under the per-call timeout.
    pub(crate) async fn timed<T>(&self, call: impl Future<Output = Result<T>>) -> Result<T> {
        match self.options.timeout() {
            None => call.await,
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(result) => result,
                Err(_) => Err(Error::status(
                    Kind::DeadlineExceeded,
                    Code::DeadlineExceeded,
                    None,
                    format!("the call did not finish within {limit:?}"),
                )),
            },
        }
    }

    /// A read: retried on `UNAVAILABLE` under the policy (`policy` or the client's).
    pub(crate) async fn read<T, F, Fut>(
        &self,
        what: &'static str,
        policy: Option<RetryPolicy>,
        mut attempt: F,
    ) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let policy = policy.unwrap_or(*self.options.retry());
        let mut first = true;
        read_with_retries(what, policy, || {
            // A retry finds a client closed during the pause before it closed.
            let closed = if std::mem::take(&mut first) {
                None
            } else {
                self.backend().err()
            };
            let call = attempt();
            async move {
                match closed {
                    Some(e) => Err(e),
                    None => self.timed(call).await,
                }
            }
        })
        .await
    }

    /// A mutation: sent once; a transport failure after it may have reached the worker
    /// leaves its outcome unknown (S2).
    pub(crate) async fn mutate<T>(
        &self,
        call: impl Future<Output = Result<T>>,
        idempotency_key: Option<&str>,
    ) -> Result<T> {
        self.timed(call).await.map_err(|e| {
            let e = if e.is(Kind::Transport) && e.reason() != Some(reasons::UNREACHABLE) {
                e.with_kind(Kind::OutcomeUnknown)
            } else {
                e
            };
            match idempotency_key {
                Some(key) if e.idempotency_key().is_none() => e.with_idempotency_key(key),
                _ => e,
            }
        })
    }
}
