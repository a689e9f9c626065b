//! [`Client`]: one API over every placement.

use crate::Result;
use crate::artifacts::Artifacts;
use crate::backend::Backend;
use crate::calls::Calls;
use crate::grpc::{GrpcBackend, SessionSource};
use crate::model::ServerInfo;
use crate::options::ClientOptions;
use crate::placement::sidecar::SidecarSessions;
use crate::placement::{DaemonOptions, DaemonSessions, SidecarOptions};
use crate::runs::Runs;

/// A connection to a worker: a shared daemon (`Client::connect`), a private sidecar
/// (`Client::start_sidecar`) or an in-process backend ([`Client::embedded`]).
///
/// Cloning is cheap and shares the connection. Every call can be cancelled by dropping
/// its future or stream: nothing keeps running in the background.
///
/// ```
/// # #[cfg(feature = "embedded")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> colossus_sdk::Result<()> {
/// use colossus_sdk::Client;
/// use colossus_sdk::embedded::EmbeddedRuntime;
/// use colossus_sdk::model::{CreateRunRequest, RunStatus};
///
/// let client = Client::embedded(EmbeddedRuntime::new());
/// let created = client.runs().create(CreateRunRequest::text("hello")).await?;
/// let run = client.runs().wait(&created.run.run_id).await?;
/// assert_eq!(run.status, RunStatus::Succeeded);
/// client.close();
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "embedded"))]
/// # fn main() {}
/// ```
#[derive(Clone)]
pub struct Client {
    calls: Calls,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", self.calls.options())
            .field("closed", &self.calls.is_closed())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client over any [`Backend`]: the embedded runtime, or a host's own (see
    /// [`backend`](crate::backend)). Every watch, retry and integrity rule still applies.
    pub fn embedded(backend: impl Backend) -> Client {
        Client::from_backend(Box::new(backend), ClientOptions::default())
    }

    /// [`Client::embedded`] with options.
    pub fn embedded_with_options(backend: impl Backend, options: ClientOptions) -> Client {
        Client::from_backend(Box::new(backend), options)
    }

    /// Connects to an installed shared worker: checks its discovery files against the
    /// provisioned identity, makes a pinned TLS 1.3 handshake, only then asks the
    /// credential provider for the bearer, and verifies GetServerInfo before returning.
    /// Nothing is sent to a worker that fails a check, and the bearer to none.
    pub async fn connect(options: DaemonOptions) -> Result<Client> {
        let sessions = DaemonSessions::open(&options).await?;
        Ok(Client::over_grpc(
            sessions,
            options.client_options().clone(),
        ))
    }

    /// Starts a private worker and connects to it: spawns the program in its own process
    /// group, bootstraps it over inherited pipes (the bearer never leaves memory), checks
    /// every member of its reply, and proves it exactly as a daemon is proven (pinned TLS
    /// 1.3, GetServerInfo reporting the instance and the SIDECAR placement).
    pub async fn start_sidecar(options: SidecarOptions) -> Result<Client> {
        let client_options = options.client_options().clone();
        let sessions = SidecarSessions::open(options).await?;
        Ok(Client::over_grpc(sessions, client_options))
    }

    /// A client over the gRPC backend (the daemon's and the sidecar's connect use it).
    pub(crate) fn over_grpc(sessions: impl SessionSource, options: ClientOptions) -> Client {
        Client::from_backend(Box::new(GrpcBackend::new(sessions)), options)
    }

    pub(crate) fn from_backend(backend: Box<dyn Backend>, options: ClientOptions) -> Client {
        Client {
            calls: Calls::new(backend, options),
        }
    }

    /// A client on the same connection with other options (timeout, retry policy...).
    pub fn with_options(&self, options: ClientOptions) -> Client {
        Client {
            calls: self.calls.with_options(options),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ClientOptions {
        self.calls.options()
    }

    /// What the worker advertises (its identity was verified when connecting).
    pub async fn server_info(&self) -> Result<ServerInfo> {
        self.calls.server_info().await
    }

    /// Create, read, list, watch, cancel and answer runs.
    pub fn runs(&self) -> Runs<'_> {
        Runs::new(&self.calls)
    }

    /// Upload and download artifacts.
    pub fn artifacts(&self) -> Artifacts<'_> {
        Artifacts::new(&self.calls)
    }

    /// Closes the connection (for a sidecar: stops the worker). Later calls, on this
    /// client and every clone, fail with [`Kind::ClientClosed`](crate::Kind::ClientClosed). Idempotent.
    pub fn close(&self) {
        self.calls.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.calls.is_closed()
    }
}
