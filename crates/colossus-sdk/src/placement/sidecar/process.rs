//! One sidecar worker process: spawned directly (no shell) in its own process group with
//! exactly two extra inherited pipe ends (fd 3: the request, fd 4: the reply), the
//! bootstrap exchange bounded in time, and its exit observed by a task of its own.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;

use super::bootstrap::{Reply, Request, encode_request, parse_reply_for, read_frame};
use super::options::SidecarOptions;
use crate::{Error, Kind, Result, reasons};

/// The child's descriptor numbers, as conformance/docs/sidecar.md names them.
const CHILD_IN_FD: i32 = 3;
const CHILD_OUT_FD: i32 = 4;

/// A running (or exited) worker and what its bootstrap said.
pub(crate) struct Process {
    pgid: i32,
    /// Our end of the request pipe; closing it asks the worker to stop.
    keepalive: Option<pipe::Sender>,
    exited: watch::Receiver<bool>,
    pub(crate) reply: Reply,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("pgid", &self.pgid)
            .field("exited", &*self.exited.borrow())
            .finish_non_exhaustive()
    }
}

fn io_error(message: &str, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
    Error::local(Kind::Sidecar, reasons::BOOTSTRAP_IO, message).with_source(e)
}

/// The refusal of a worker program that does not exist, with what to do about it.
pub(crate) fn program_not_found(program: &str, cause: std::io::Error) -> Error {
    Error::local(
        Kind::Sidecar,
        reasons::SIDECAR_PROGRAM_NOT_FOUND,
        format!(
            "the sidecar worker program {program:?} was not found: install the worker \
             (the reference worker: pip install ./conformance in a checkout of colossus-sdks) or set the executable of \
             SidecarOptions to its absolute path"
        ),
    )
    .with_metadata("program", program)
    .with_source(cause)
}

/// A process-group-wide signal; an already gone group is not an error.
pub(crate) fn signal_group(pgid: i32, signal: Signal) {
    if let Some(pid) = Pid::from_raw(pgid) {
        let _ = kill_process_group(pid, signal);
    }
}

impl Process {
    /// Spawns the worker and runs the bootstrap exchange, bounded by the startup timeout.
    /// A failure ends the worker's process group before returning.
    pub(crate) async fn spawn(options: &SidecarOptions, state_dir: &str) -> Result<Process> {
        let request = encode_request(&Request {
            state_dir: state_dir.to_owned(),
            application_id: options.application_id.clone(),
            scopes: options.scopes.clone(),
            roles: options.roles.clone(),
            tools: options.tools.clone(),
            execution_boundary: options.execution_boundary,
        })?;
        // Close-on-exec everywhere: only the two mapped ends reach the child.
        let (in_read, in_write) = pipe_with(PipeFlags::CLOEXEC)
            .map_err(|e| io_error("cannot create the bootstrap pipe", e))?;
        let (out_read, out_write) = pipe_with(PipeFlags::CLOEXEC)
            .map_err(|e| io_error("cannot create the bootstrap pipe", e))?;
        // A bound start runs the sealed, verified copy, never the path again.
        let sealed = match options
            .executable_sha256
            .as_deref()
            .and_then(super::binding::parse_digest)
        {
            Some(digest) => Some(super::binding::seal(&options.executable, &digest)?),
            None => None,
        };
        let mut command = match &sealed {
            Some(_) => tokio::process::Command::new(super::binding::SealedExecutable::program()),
            None => tokio::process::Command::new(&options.executable),
        };
        command
            .args(&options.extra_args)
            .args([
                "--sidecar",
                "--bootstrap-in-fd",
                "3",
                "--bootstrap-out-fd",
                "4",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(if options.inherit_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .process_group(0)
            .kill_on_drop(false);
        let mut mappings = vec![
            FdMapping {
                parent_fd: in_read,
                child_fd: CHILD_IN_FD,
            },
            FdMapping {
                parent_fd: out_write,
                child_fd: CHILD_OUT_FD,
            },
        ];
        if let Some(sealed) = sealed {
            mappings.push(FdMapping {
                parent_fd: sealed.fd,
                child_fd: super::binding::CHILD_EXEC_FD,
            });
        }
        command
            .fd_mappings(mappings)
            .map_err(|e| io_error("cannot hand the bootstrap pipes to the worker", e))?;
        let spawned = command.spawn();
        // The parent's copies of the child's ends must close now, or the reply pipe never
        // reports end-of-file when the worker dies.
        drop(command);
        let program = options.executable.to_string_lossy().into_owned();
        let mut child = spawned.map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                program_not_found(&program, e)
            } else {
                Error::local(
                    Kind::Sidecar,
                    reasons::SIDECAR_SPAWN_FAILED,
                    "cannot start the worker",
                )
                .with_metadata("program", program.clone())
                .with_source(e)
            }
        })?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        let (exit_tx, exited) = watch::channel(false);
        tokio::spawn(async move {
            let status = child.wait().await;
            tracing::debug!(pid, ?status, "sidecar worker exited");
            let _ = exit_tx.send(true);
        });
        tracing::info!(pid, "started sidecar worker");
        match bootstrap(
            in_write,
            out_read,
            &request,
            options.execution_boundary,
            options.startup_timeout,
        )
        .await
        {
            Ok((keepalive, reply)) => Ok(Process {
                pgid: pid,
                keepalive: Some(keepalive),
                exited,
                reply,
            }),
            Err(e) => {
                signal_group(pid, Signal::KILL);
                Err(e)
            }
        }
    }

    /// Whether the worker has exited.
    pub(crate) fn has_exited(&self) -> bool {
        *self.exited.borrow()
    }

    /// Whether the worker exits within `grace`.
    pub(crate) async fn exits_within(&self, grace: Duration) -> bool {
        let mut rx = self.exited.clone();
        tokio::time::timeout(grace, rx.wait_for(|gone| *gone))
            .await
            .is_ok()
    }

    /// Resolves once the worker has exited (never, if its exit cannot be observed).
    pub(crate) fn exit(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.exited.clone();
        async move {
            if rx.wait_for(|gone| *gone).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Kills the whole process group at once (grandchildren included).
    pub(crate) fn kill(&mut self) {
        self.keepalive = None;
        signal_group(self.pgid, Signal::KILL);
    }

    /// Asks the worker to stop (its request pipe closes), then kills its process group
    /// after `grace`, whether or not it stopped: nothing it started may outlive it.
    pub(crate) async fn stop(&mut self, grace: Duration) {
        self.keepalive = None;
        if !self.exits_within(grace).await {
            signal_group(self.pgid, Signal::TERM);
            let _ = self.exits_within(Duration::from_secs(2)).await;
        }
        signal_group(self.pgid, Signal::KILL);
        tracing::info!(pid = self.pgid, "sidecar worker stopped");
    }

    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn bootstrap(
    in_write: OwnedFd,
    out_read: OwnedFd,
    request: &[u8],
    boundary: crate::placement::ManagedExecutionBoundary,
    timeout: Duration,
) -> Result<(pipe::Sender, Reply)> {
    let exchange = async {
        let mut sender = pipe::Sender::from_owned_fd(in_write)
            .map_err(|e| io_error("cannot use the bootstrap pipe", e))?;
        let mut receiver = pipe::Receiver::from_owned_fd(out_read)
            .map_err(|e| io_error("cannot use the bootstrap pipe", e))?;
        sender
            .write_all(request)
            .await
            .map_err(|e| io_error("the worker did not accept the bootstrap request", e))?;
        let body = read_frame(&mut receiver).await?;
        Ok::<_, Error>((sender, parse_reply_for(&body, Some(boundary))?))
    };
    tokio::time::timeout(timeout, exchange).await.map_err(|_| {
        Error::local(
            Kind::Sidecar,
            reasons::BOOTSTRAP_TIMEOUT,
            "the sidecar did not answer the bootstrap in time",
        )
    })?
}
