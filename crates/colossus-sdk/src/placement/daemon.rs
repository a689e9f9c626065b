//! The daemon placement: an installed, shared worker found through its discovery folder
//! and proven against the identity provisioned at enrolment (C1-C6).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::BoxFuture;
use crate::credentials::CredentialProvider;
use crate::grpc::{GrpcSession, SessionSource};
use crate::model::DeploymentMode;
use crate::options::ClientOptions;
use crate::transport::{Session, Target, open_session};
use crate::trust::descriptor::{discover, is_opaque_id};
use crate::trust::pin::Pin;
use crate::{Error, Kind, Result, reasons};

/// The API major version this SDK speaks.
pub const API_MAJOR: u32 = 1;

/// How to reach and prove an installed shared worker.
///
/// The four inputs are independent: the discovery folder (where the worker says it
/// listens), the instance ID and certificate SHA-256 printed at enrolment (from your own
/// trusted configuration, never re-read from that folder), and a credential provider,
/// asked only after every trust check passed.
///
/// ```
/// use colossus_sdk::Bearer;
/// use colossus_sdk::credentials::InMemoryCredentialProvider;
/// use colossus_sdk::placement::DaemonOptions;
///
/// let bearer = Bearer::new("cb1_".to_owned() + &"x".repeat(43))?;
/// let options = DaemonOptions::builder()
///     .public_api_dir("/home/me/.local/state/colossus/public-api")
///     .expected_instance_id("inst_7Q2")
///     .expected_certificate_sha256("ab".repeat(32))
///     .credentials(InMemoryCredentialProvider::new(bearer))
///     .build()?;
/// assert_eq!(options.expected_instance_id(), "inst_7Q2");
/// // let client = colossus_sdk::Client::connect(options).await?;
/// # Ok::<(), colossus_sdk::Error>(())
/// ```
#[derive(Clone)]
pub struct DaemonOptions {
    public_api_dir: PathBuf,
    expected_instance_id: String,
    expected_pin: Pin,
    api_major: u32,
    mode: DeploymentMode,
    credentials: Arc<dyn CredentialProvider>,
    client: ClientOptions,
}

impl std::fmt::Debug for DaemonOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonOptions")
            .field("public_api_dir", &self.public_api_dir)
            .field("expected_instance_id", &self.expected_instance_id)
            .field("expected_pin", &self.expected_pin)
            .field("api_major", &self.api_major)
            .field("mode", &self.mode)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl DaemonOptions {
    /// A builder; `public_api_dir`, `expected_instance_id`,
    /// `expected_certificate_sha256` and `credentials` are required.
    pub fn builder() -> DaemonOptionsBuilder {
        DaemonOptionsBuilder::default()
    }

    /// The worker's `--public-api-dir`.
    pub fn public_api_dir(&self) -> &Path {
        &self.public_api_dir
    }

    /// The instance ID enrolment printed.
    pub fn expected_instance_id(&self) -> &str {
        &self.expected_instance_id
    }

    /// The behaviour every placement shares.
    pub fn client_options(&self) -> &ClientOptions {
        &self.client
    }
}

/// Builds [`DaemonOptions`].
#[derive(Default)]
pub struct DaemonOptionsBuilder {
    public_api_dir: Option<PathBuf>,
    expected_instance_id: Option<String>,
    expected_pin: Option<String>,
    api_major: Option<u32>,
    mode: Option<DeploymentMode>,
    credentials: Option<Arc<dyn CredentialProvider>>,
    client: Option<ClientOptions>,
}

fn invalid(field: &str, message: &str) -> Error {
    Error::local(Kind::InvalidArgument, reasons::FIELD_INVALID, message)
        .with_metadata("field", field)
}

impl DaemonOptionsBuilder {
    /// The worker's `--public-api-dir` (owner-only, mode 0700).
    pub fn public_api_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.public_api_dir = Some(dir.into());
        self
    }

    /// The instance ID enrolment printed.
    pub fn expected_instance_id(mut self, id: impl Into<String>) -> Self {
        self.expected_instance_id = Some(id.into());
        self
    }

    /// The certificate pin enrolment printed (64 lower-case hex characters).
    pub fn expected_certificate_sha256(mut self, pin: impl Into<String>) -> Self {
        self.expected_pin = Some(pin.into());
        self
    }

    /// The API major version the worker must report (default [`API_MAJOR`]).
    pub fn api_major(mut self, major: u32) -> Self {
        self.api_major = Some(major);
        self
    }

    /// The placement GetServerInfo must report (default [`DeploymentMode::SharedDaemon`]).
    pub fn expected_deployment_mode(mut self, mode: DeploymentMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Where the bearer comes from.
    pub fn credentials(mut self, provider: impl CredentialProvider) -> Self {
        self.credentials = Some(Arc::new(provider));
        self
    }

    /// Timeouts, retries and caps (default [`ClientOptions::default`]).
    pub fn client_options(mut self, options: ClientOptions) -> Self {
        self.client = Some(options);
        self
    }

    /// Checks every field; a missing or malformed one is `FIELD_INVALID` naming it.
    pub fn build(self) -> Result<DaemonOptions> {
        let public_api_dir = self
            .public_api_dir
            .ok_or_else(|| invalid("public_api_dir", "public_api_dir is required"))?;
        let expected_instance_id = self
            .expected_instance_id
            .filter(|id| is_opaque_id(id))
            .ok_or_else(|| {
                invalid(
                    "expected_instance_id",
                    "expected_instance_id must be 1-64 characters of [A-Za-z0-9_-]",
                )
            })?;
        let expected_pin = self
            .expected_pin
            .as_deref()
            .and_then(Pin::parse)
            .ok_or_else(|| {
                invalid(
                    "expected_certificate_sha256",
                    "expected_certificate_sha256 must be 64 lower-case hex characters",
                )
            })?;
        let credentials = self
            .credentials
            .ok_or_else(|| invalid("credentials", "credentials is required"))?;
        Ok(DaemonOptions {
            public_api_dir,
            expected_instance_id,
            expected_pin,
            api_major: self.api_major.unwrap_or(API_MAJOR),
            mode: self.mode.unwrap_or(DeploymentMode::SharedDaemon),
            credentials,
            client: self.client.unwrap_or_default(),
        })
    }
}

/// A daemon's sessions: one, fixed. tonic reconnects it through the pinned connector.
pub(crate) struct DaemonSessions {
    session: Arc<Session>,
}

impl SessionSource for DaemonSessions {
    fn current(&self) -> BoxFuture<'_, Result<Arc<dyn GrpcSession>>> {
        let session: Arc<dyn GrpcSession> = self.session.clone();
        Box::pin(async move { Ok(session) })
    }

    fn close(&self) {}
}

impl DaemonSessions {
    /// Checks the discovery files, then opens and verifies the one session
    /// ([`Client::connect`](crate::Client::connect) says in which order).
    pub(crate) async fn open(options: &DaemonOptions) -> Result<DaemonSessions> {
        let endpoint = discover(
            &options.public_api_dir,
            &options.expected_instance_id,
            &options.expected_pin,
        )?;
        let target = Target {
            addr: endpoint.addr,
            pin: options.expected_pin,
            instance_id: options.expected_instance_id.clone(),
            api_major: options.api_major,
            mode: options.mode,
        };
        let session = open_session(&target, &*options.credentials, &options.client).await?;
        Ok(DaemonSessions {
            session: Arc::new(session),
        })
    }
}

#[cfg(test)]
mod tests;
