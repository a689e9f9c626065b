//! The sidecar supervisor: the session source of a sidecar client. It restarts a worker
//! that exited (bounded, with backoff) when the next call asks for a session, never
//! replaying the call that met the exit, and ends the worker's process group on close and
//! on drop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;

use rustix::process::Signal;
use tokio::sync::Mutex;

use super::options::SidecarOptions;
use super::process::{Process, signal_group};
use crate::backend::BoxFuture;
use crate::credentials::InMemoryCredentialProvider;
use crate::grpc::{GrpcSession, SessionSource};
use crate::model::DeploymentMode;
use crate::placement::API_MAJOR;
use crate::transport::{Session, Target, open_session};
use crate::trust::owner_only_file::check_private_dir;
use crate::{Error, Kind, Result, reasons};

/// The longest delay between two restarts.
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(5);
/// How long an exit noticed right after a failed connect counts as "died while connecting".
const EXIT_NOTICE_GRACE: Duration = Duration::from_secs(1);

struct Current {
    process: Option<Process>,
    session: Option<Arc<Session>>,
    restarts: u32,
}

pub(crate) struct SidecarSessions {
    options: SidecarOptions,
    state_dir: PathBuf,
    /// A private state folder the supervisor made, removed on close.
    owned_dir: SyncMutex<Option<PathBuf>>,
    current: Mutex<Current>,
    /// The live worker's process group, for a `Drop` or `close` that cannot await.
    pgid: Arc<AtomicI32>,
    closed: AtomicBool,
}

fn make_private_dir() -> Result<PathBuf> {
    let mut suffix = [0u8; 8];
    let _ = getrandom::fill(&mut suffix);
    let name: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("colossus-sidecar-{name}"));
    let err = |e: std::io::Error| {
        Error::local(
            Kind::Sidecar,
            reasons::STATE_DIR_INVALID,
            "cannot create a private state directory",
        )
        .with_source(e)
    };
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(err)?;
    Ok(dir)
}

use std::os::unix::fs::DirBuilderExt;

/// The error of a connect whose worker exited before it was proven: what a refused
/// connection to it says (every SDK reports a sidecar that died while connecting so).
fn exited_while_connecting() -> Error {
    Error::status(
        Kind::Transport,
        crate::Code::Unavailable,
        Some(reasons::UNREACHABLE.to_owned()),
        "the sidecar worker exited while the client was connecting to it",
    )
}

impl SidecarSessions {
    fn new(options: SidecarOptions) -> Result<Self> {
        let (state_dir, owned) = match &options.state_dir {
            Some(dir) => (dir.clone(), None),
            None => {
                let dir = make_private_dir()?;
                (dir.clone(), Some(dir))
            }
        };
        check_private_dir(
            &state_dir,
            Kind::Sidecar,
            reasons::STATE_DIR_INVALID,
            "the sidecar state directory",
        )?;
        Ok(SidecarSessions {
            options,
            state_dir,
            owned_dir: SyncMutex::new(owned),
            current: Mutex::new(Current {
                process: None,
                session: None,
                restarts: 0,
            }),
            pgid: Arc::new(AtomicI32::new(0)),
            closed: AtomicBool::new(false),
        })
    }

    /// Spawns a worker, bootstraps it and opens a verified session on what it replied. A
    /// worker that exits meanwhile ends the connect at once, as a refused connection does,
    /// whatever the connect was still waiting on (a handshake or a call on a connection
    /// that outlived the worker, say): the caller then restarts it or hears of it now.
    async fn start(&self, current: &mut Current) -> Result<Arc<Session>> {
        let state_dir = self.state_dir.to_string_lossy().into_owned();
        let process = Process::spawn(&self.options, &state_dir).await?;
        self.pgid.store(process.pgid(), Ordering::SeqCst);
        let reply = &process.reply;
        let target = Target {
            addr: reply.endpoint.addr,
            pin: reply.certificate.pin,
            instance_id: reply.instance_id.clone(),
            api_major: API_MAJOR,
            mode: DeploymentMode::Sidecar,
        };
        // The bearer came over the pipe and stays in memory; the provider only hands it on.
        let credentials = InMemoryCredentialProvider::new(reply.bearer.clone());
        let exit = process.exit();
        current.process = Some(process);
        let session = tokio::select! {
            biased;
            opened = open_session(&target, &credentials, &self.options.client) => opened?,
            () = exit => return Err(exited_while_connecting()),
        };
        let session = Arc::new(session);
        current.session = Some(session.clone());
        Ok(session)
    }

    /// Restarts an exited worker, within the restart budget and after its backoff.
    async fn restart(&self, current: &mut Current) -> Result<Arc<Session>> {
        current.session = None;
        if let Some(mut old) = current.process.take() {
            old.kill();
        }
        if current.restarts >= self.options.max_restarts {
            return Err(Error::local(
                Kind::Sidecar,
                reasons::SIDECAR_RESTARTS_EXHAUSTED,
                format!(
                    "the sidecar exited unexpectedly and {} restarts were used",
                    current.restarts
                ),
            ));
        }
        current.restarts += 1;
        let delay = self
            .options
            .restart_backoff
            .saturating_mul(1 << (current.restarts - 1).min(8))
            .min(MAX_RESTART_BACKOFF);
        tracing::warn!(
            restart = current.restarts,
            ?delay,
            "restarting sidecar worker"
        );
        tokio::time::sleep(delay).await;
        self.start(current).await
    }

    /// The first start: a worker that dies while the client is still connecting is
    /// restarted within the same budget. Only a transport failure (a refused or lost
    /// connection) can be a dying worker's doing, so only then is its exit awaited; a
    /// refusal (trust, compatibility, credential, a failed spawn or bootstrap) returns at
    /// once.
    async fn first_session(&self) -> Result<()> {
        let mut current = self.current.lock().await;
        let mut result = self.start(&mut current).await;
        while let Err(e) = &result {
            if !might_be_an_exit(e) {
                break;
            }
            let died = match &current.process {
                Some(p) => p.exits_within(EXIT_NOTICE_GRACE).await,
                None => false,
            };
            if !died {
                break;
            }
            result = self.restart(&mut current).await;
        }
        result.map(drop)
    }
}

/// Whether a failed connect may be the worker's exit: a transport failure. A trust,
/// compatibility or credential refusal came from a live worker, and a sidecar error is
/// the spawn or the bootstrap itself.
fn might_be_an_exit(err: &Error) -> bool {
    err.is(Kind::Transport) && !err.is(Kind::Sidecar)
}

impl SessionSource for SidecarSessions {
    fn current(&self) -> BoxFuture<'_, Result<Arc<dyn GrpcSession>>> {
        Box::pin(async move {
            if self.closed.load(Ordering::SeqCst) {
                return Err(Error::local(
                    Kind::ClientClosed,
                    reasons::CLIENT_CLOSED,
                    "the client is closed",
                ));
            }
            let mut current = self.current.lock().await;
            let exited = current.process.as_ref().is_none_or(Process::has_exited);
            let session = match (&current.session, exited) {
                (Some(s), false) => s.clone(),
                _ => self.restart(&mut current).await?,
            };
            Ok(session as Arc<dyn GrpcSession>)
        })
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let pgid = self.pgid.clone();
        let grace = self.options.shutdown_grace;
        let owned = self
            .owned_dir
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        // Let the worker stop on its own (its request pipe closes with the process), then
        // end its group. Without a runtime to wait on, the group is killed at once.
        let process = self.current.try_lock().ok().and_then(|mut c| {
            c.session = None;
            c.process.take()
        });
        match (process, tokio::runtime::Handle::try_current()) {
            (Some(mut p), Ok(handle)) => {
                handle.spawn(async move {
                    p.stop(grace).await;
                    remove_dir(owned);
                });
            }
            (process, _) => {
                drop(process);
                signal_group(pgid.load(Ordering::SeqCst), Signal::KILL);
                remove_dir(owned);
            }
        }
    }
}

fn remove_dir(dir: Option<PathBuf>) {
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}

impl Drop for SidecarSessions {
    fn drop(&mut self) {
        // Process's own Drop kills its group; this covers a process still being started.
        signal_group(self.pgid.load(Ordering::SeqCst), Signal::KILL);
        if !self.closed.load(Ordering::SeqCst) {
            remove_dir(
                self.owned_dir
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take(),
            );
        }
    }
}

impl SidecarSessions {
    /// Starts the worker and proves its first session
    /// ([`Client::start_sidecar`](crate::Client::start_sidecar) says how); a failure
    /// stops it again.
    pub(crate) async fn open(options: SidecarOptions) -> Result<SidecarSessions> {
        let sessions = SidecarSessions::new(options)?;
        if let Err(e) = sessions.first_session().await {
            sessions.close();
            return Err(e);
        }
        Ok(sessions)
    }
}

#[cfg(test)]
impl SidecarSessions {
    pub(super) async fn new_for_test(options: SidecarOptions) -> Result<Self> {
        let sessions = SidecarSessions::new(options)?;
        sessions.first_session().await?;
        Ok(sessions)
    }

    /// Kills the live worker's process group as a crash would; returns its pgid.
    pub(super) async fn kill_for_test(&self) -> i32 {
        let pgid = self.pgid.load(Ordering::SeqCst);
        signal_group(pgid, Signal::KILL);
        let current = self.current.lock().await;
        if let Some(p) = &current.process {
            assert!(p.exits_within(Duration::from_secs(5)).await);
        }
        pgid
    }

    pub(super) fn pgid_for_test(&self) -> i32 {
        self.pgid.load(Ordering::SeqCst)
    }
}
