//! [`SidecarOptions`]: how to start and supervise a private worker.

use std::path::PathBuf;
use std::time::Duration;

use crate::options::ClientOptions;
use crate::placement::ManagedExecutionBoundary;
use crate::trust::descriptor::is_opaque_id;
use crate::{Error, Kind, Result, reasons};

/// The scopes a sidecar's application gets unless others are given.
pub const DEFAULT_SIDECAR_SCOPES: [&str; 4] = [
    "runs:execute",
    "runs:read",
    "runs:control",
    "prompts:respond",
];

/// How to start and supervise a private worker.
///
/// The SDK spawns `executable` directly (no shell) in its own process group, hands it
/// the bootstrap request over an inherited pipe, reads the endpoint, pin and a one-use
/// bearer from a second pipe (the bearer exists only in this process's memory), connects
/// with the same checks as a daemon, restarts the worker at most
/// [`max_restarts`](SidecarOptionsBuilder::max_restarts) times when it exits (never
/// replaying the call that was in flight), and ends its whole process group on
/// [`Client::close`](crate::Client::close) or when the client is dropped.
///
/// ```
/// use colossus_sdk::placement::SidecarOptions;
///
/// let options = SidecarOptions::builder("colossus-reference-worker", "my-app")
///     .roles(["default"])
///     .build()?;
/// assert_eq!(options.application_id(), "my-app");
/// // let client = colossus_sdk::Client::start_sidecar(options).await?;
/// # Ok::<(), colossus_sdk::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SidecarOptions {
    pub(crate) executable: PathBuf,
    pub(crate) extra_args: Vec<String>,
    pub(crate) application_id: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) roles: Vec<String>,
    pub(crate) tools: Vec<String>,
    pub(crate) state_dir: Option<PathBuf>,
    pub(crate) startup_timeout: Duration,
    pub(crate) max_restarts: u32,
    pub(crate) restart_backoff: Duration,
    pub(crate) shutdown_grace: Duration,
    pub(crate) inherit_stderr: bool,
    pub(crate) client: ClientOptions,
    pub(crate) execution_boundary: ManagedExecutionBoundary,
    pub(crate) executable_sha256: Option<String>,
}

impl SidecarOptions {
    /// A builder for the worker program `executable` (a bare name is looked up on `PATH`)
    /// and the application its bearer is issued to.
    pub fn builder(
        executable: impl Into<PathBuf>,
        application_id: impl Into<String>,
    ) -> SidecarOptionsBuilder {
        SidecarOptionsBuilder {
            options: SidecarOptions {
                executable: executable.into(),
                extra_args: Vec::new(),
                application_id: application_id.into(),
                scopes: DEFAULT_SIDECAR_SCOPES
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
                roles: vec!["default".to_owned()],
                tools: Vec::new(),
                state_dir: None,
                startup_timeout: Duration::from_secs(30),
                max_restarts: 3,
                restart_backoff: Duration::from_millis(500),
                shutdown_grace: Duration::from_secs(5),
                inherit_stderr: false,
                client: ClientOptions::default(),
                execution_boundary: ManagedExecutionBoundary::FullAccess,
                executable_sha256: None,
            },
        }
    }

    /// The application the bearer is issued to.
    pub fn application_id(&self) -> &str {
        &self.application_id
    }

    /// The behaviour every placement shares.
    pub fn client_options(&self) -> &ClientOptions {
        &self.client
    }

    /// The execution boundary sent in the bootstrap (default
    /// [`FullAccess`](ManagedExecutionBoundary::FullAccess)).
    pub fn execution_boundary(&self) -> ManagedExecutionBoundary {
        self.execution_boundary
    }

    /// The trusted SHA-256 of the executable, when the start is bound to it.
    pub fn executable_sha256(&self) -> Option<&str> {
        self.executable_sha256.as_deref()
    }
}

/// Builds [`SidecarOptions`].
#[derive(Debug, Clone)]
pub struct SidecarOptionsBuilder {
    options: SidecarOptions,
}

impl SidecarOptionsBuilder {
    /// Non-secret arguments placed before the bootstrap flags (`--limit`, `--log-level`...).
    pub fn extra_args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.options.extra_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The exact scopes to grant (default [`DEFAULT_SIDECAR_SCOPES`]).
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.options.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The logical roles to grant, the first being a run's default (default `["default"]`).
    pub fn roles<I: IntoIterator<Item = S>, S: Into<String>>(mut self, roles: I) -> Self {
        self.options.roles = roles.into_iter().map(Into::into).collect();
        self
    }

    /// The tools to grant (default none).
    pub fn tools<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tools: I) -> Self {
        self.options.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// An existing folder owned by this user, mode 0700, absolute; by default a private
    /// temporary one is made and removed on close. A restarted worker with the same folder
    /// keeps its identity and its runs.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.state_dir = Some(dir.into());
        self
    }

    /// Bounds the bootstrap exchange (default 30 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.options.startup_timeout = timeout;
        self
    }

    /// How many unexpected exits are restarted over the client's life (0-3, default 3).
    pub fn max_restarts(mut self, n: u32) -> Self {
        self.options.max_restarts = n;
        self
    }

    /// The delay before the first restart, doubled for each next one up to 5 s
    /// (default 500 ms).
    pub fn restart_backoff(mut self, initial: Duration) -> Self {
        self.options.restart_backoff = initial;
        self
    }

    /// How long [`Client::close`](crate::Client::close) lets the worker stop on its own
    /// before its process group is killed (default 5 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.options.shutdown_grace = grace;
        self
    }

    /// Whether the worker writes to this process's stderr (default: discarded).
    pub fn inherit_stderr(mut self, inherit: bool) -> Self {
        self.options.inherit_stderr = inherit;
        self
    }

    /// Timeouts, retries and caps (default [`ClientOptions::default`]).
    pub fn client_options(mut self, options: ClientOptions) -> Self {
        self.options.client = options;
        self
    }

    /// The managed execution boundary, an explicit choice independent of the access
    /// profile (never inferred from it). The worker must report the same value back.
    pub fn execution_boundary(mut self, boundary: ManagedExecutionBoundary) -> Self {
        self.options.execution_boundary = boundary;
        self
    }

    /// Binds the start to these exact executable bytes (64 lower-case hex characters of
    /// SHA-256; the executable must then be an absolute path). On Linux the SDK copies the
    /// file once into a sealed memory file, checks the digest and executes that copy, so a
    /// file swapped after the check never runs; where no equivalent exists the start fails
    /// closed. For a `#!` script only the script's bytes are bound, not its interpreter.
    pub fn executable_sha256(mut self, digest: impl Into<String>) -> Self {
        self.options.executable_sha256 = Some(digest.into());
        self
    }

    /// Checks every field; a malformed one is `FIELD_INVALID` naming it.
    pub fn build(self) -> Result<SidecarOptions> {
        let o = self.options;
        let invalid = |field: &str, message: &str| {
            Error::local(Kind::InvalidArgument, reasons::FIELD_INVALID, message)
                .with_metadata("field", field)
        };
        if o.executable.as_os_str().is_empty() {
            return Err(invalid("executable", "executable is required"));
        }
        if let Some(digest) = &o.executable_sha256 {
            if super::binding::parse_digest(digest).is_none() {
                return Err(invalid(
                    "executable_sha256",
                    "executable_sha256 must be 64 lower-case hex characters",
                ));
            }
            if !o.executable.is_absolute() {
                return Err(invalid(
                    "executable",
                    "a bound executable must be an absolute path",
                ));
            }
        }
        if !is_opaque_id(&o.application_id) {
            return Err(invalid(
                "application_id",
                "application_id must be 1-64 characters of [A-Za-z0-9_-]",
            ));
        }
        if o.max_restarts > 3 {
            return Err(invalid(
                "max_restarts",
                "max_restarts must be between 0 and 3",
            ));
        }
        if o.startup_timeout.is_zero() {
            return Err(invalid(
                "startup_timeout",
                "startup_timeout must be above zero",
            ));
        }
        if o.state_dir.as_ref().is_some_and(|d| !d.is_absolute()) {
            return Err(Error::local(
                Kind::Sidecar,
                reasons::STATE_DIR_INVALID,
                "state_dir must be an absolute path",
            )
            .with_metadata("field", "state_dir"));
        }
        Ok(o)
    }
}
