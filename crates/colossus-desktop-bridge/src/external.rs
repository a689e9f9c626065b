//! External targets: a saved shared daemon, added only after a native confirmation that
//! names the label, instance ID and full certificate pin (B2).

use std::path::PathBuf;
use std::sync::Arc;

use colossus_sdk::credentials::CredentialProvider;
use futures_util::future::BoxFuture;

/// What the native confirmation shows: all native-sourced, never renderer input.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ExternalConfirmation<'a> {
    /// Why it is asked: `import`, `select`, `reconnect` or `remove`.
    pub action: &'static str,
    /// The saved label.
    pub label: &'a str,
    /// The instance ID provisioned at enrolment.
    pub instance_id: &'a str,
    /// The full certificate pin (64 lower-case hex characters), never shortened.
    pub certificate_sha256: &'a str,
}

/// The operating-system dialog that confirms an External import, selection, reconnect or
/// removal. The desktop application implements it with a native dialog; a renderer can
/// neither call it nor answer it. Returning `false` leaves everything as it was.
pub trait ConfirmExternal: Send + Sync + 'static {
    /// Shows the confirmation and resolves to the user's answer.
    fn confirm<'a>(&'a self, request: ExternalConfirmation<'a>) -> BoxFuture<'a, bool>;
}

impl<F> ConfirmExternal for F
where
    F: Fn(ExternalConfirmation<'_>) -> bool + Send + Sync + 'static,
{
    fn confirm<'a>(&'a self, request: ExternalConfirmation<'a>) -> BoxFuture<'a, bool> {
        let answer = self(request);
        Box::pin(async move { answer })
    }
}

/// A saved External daemon: the native configuration the SDK's daemon connector needs.
/// None of it ever reaches the renderer; the target is known there only by its opaque ID,
/// kind, label and health.
#[derive(Clone)]
pub struct ExternalTarget {
    pub(crate) label: String,
    pub(crate) public_api_dir: PathBuf,
    pub(crate) instance_id: String,
    pub(crate) certificate_sha256: String,
    pub(crate) credentials: Arc<dyn CredentialProvider>,
}

impl std::fmt::Debug for ExternalTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalTarget")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl ExternalTarget {
    /// An External daemon found through `public_api_dir`, held to the independently
    /// provisioned `instance_id` and `certificate_sha256`, authenticating with
    /// `credentials`.
    pub fn new(
        label: impl Into<String>,
        public_api_dir: impl Into<PathBuf>,
        instance_id: impl Into<String>,
        certificate_sha256: impl Into<String>,
        credentials: impl CredentialProvider,
    ) -> ExternalTarget {
        ExternalTarget {
            label: label.into(),
            public_api_dir: public_api_dir.into(),
            instance_id: instance_id.into(),
            certificate_sha256: certificate_sha256.into(),
            credentials: Arc::new(credentials),
        }
    }

    pub(crate) fn confirmation(&self, action: &'static str) -> ExternalConfirmation<'_> {
        ExternalConfirmation {
            action,
            label: &self.label,
            instance_id: &self.instance_id,
            certificate_sha256: &self.certificate_sha256,
        }
    }
}

/// Lends the saved provider to the SDK's daemon connector once per connect.
pub(crate) struct SharedCredentials(pub(crate) Arc<dyn CredentialProvider>);

impl CredentialProvider for SharedCredentials {
    fn bearer(
        &self,
    ) -> colossus_sdk::backend::BoxFuture<'_, colossus_sdk::Result<colossus_sdk::Bearer>> {
        self.0.bearer()
    }
}
