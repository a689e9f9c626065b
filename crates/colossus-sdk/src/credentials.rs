//! Credential providers (C8): where the bearer comes from. The SDK asks its provider only
//! after every trust check of a connection passed, including the live TLS handshake (C5),
//! and then keeps the validated [`Bearer`] in memory for the connection's life.

use crate::backend::BoxFuture;
use crate::{Bearer, Error, Kind, Result, reasons};

/// Supplies the bearer of one application.
///
/// Implement it to take the bearer from your own store. The SDK calls it once per
/// connection, after the worker's identity is proven; an error from it fails the connect
/// with [`Kind::Credential`].
///
/// ```
/// use colossus_sdk::{Bearer, Result};
/// use colossus_sdk::backend::BoxFuture;
/// use colossus_sdk::credentials::CredentialProvider;
///
/// struct FromVault;
///
/// impl CredentialProvider for FromVault {
///     fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
///         Box::pin(async { Bearer::new(fetch_from_vault()) })
///     }
/// }
/// # fn fetch_from_vault() -> String { "cb1_".to_owned() + &"x".repeat(43) }
/// ```
pub trait CredentialProvider: Send + Sync + 'static {
    /// The bearer, validated by [`Bearer::new`].
    fn bearer(&self) -> BoxFuture<'_, Result<Bearer>>;
}

/// Holds a bearer in memory: for tests, sidecars and hosts that fetched it themselves.
///
/// ```
/// use colossus_sdk::Bearer;
/// use colossus_sdk::credentials::InMemoryCredentialProvider;
///
/// let provider = InMemoryCredentialProvider::new(Bearer::new("cb1_".to_owned() + &"x".repeat(43))?);
/// assert_eq!(format!("{provider:?}"), "InMemoryCredentialProvider(<redacted>)");
/// # Ok::<(), colossus_sdk::Error>(())
/// ```
#[derive(Clone)]
pub struct InMemoryCredentialProvider {
    bearer: Bearer,
}

impl InMemoryCredentialProvider {
    /// A provider that always answers `bearer`.
    pub fn new(bearer: Bearer) -> Self {
        InMemoryCredentialProvider { bearer }
    }
}

impl std::fmt::Debug for InMemoryCredentialProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InMemoryCredentialProvider(<redacted>)")
    }
}

impl CredentialProvider for InMemoryCredentialProvider {
    fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
        let bearer = self.bearer.clone();
        Box::pin(async move { Ok(bearer) })
    }
}

/// Asks `provider` for the bearer. Whatever the provider returns on failure, the SDK
/// reports its own credential error: the catalogue's reason (`BEARER_MALFORMED`,
/// `KEYRING_UNAVAILABLE`, `KEYRING_ENTRY_MISSING` when the provider's error names one of
/// them, `PROVIDER_FAILED` otherwise) and a fixed message of the SDK's. The provider's text
/// and metadata may hold the very secret it failed to deliver, so neither is repeated: the
/// provider's error is kept behind a [`ProviderError`] source, which prints nothing of it.
pub(crate) async fn load_bearer(provider: &dyn CredentialProvider) -> Result<Bearer> {
    provider.bearer().await.map_err(credential_error)
}

/// The SDK's own credential error for a provider's failure `cause`.
pub(crate) fn credential_error(cause: Error) -> Error {
    let (reason, message) = match cause.reason() {
        Some(r) if cause.is(Kind::Credential) && r == reasons::BEARER_MALFORMED => (
            reasons::BEARER_MALFORMED,
            "the credential provider returned a malformed bearer",
        ),
        Some(r) if cause.is(Kind::Credential) && r == reasons::KEYRING_UNAVAILABLE => (
            reasons::KEYRING_UNAVAILABLE,
            "the OS keyring cannot be used; enrol with --bearer-fd and pass the bearer \
             through an InMemoryCredentialProvider or a provider of your own",
        ),
        Some(r) if cause.is(Kind::Credential) && r == reasons::KEYRING_ENTRY_MISSING => (
            reasons::KEYRING_ENTRY_MISSING,
            "the OS keyring has no bearer for the provider's service and account",
        ),
        _ => (reasons::PROVIDER_FAILED, "the credential provider failed"),
    };
    tracing::debug!(reason, "the credential provider failed");
    Error::local(Kind::Credential, reason, message).with_source(ProviderError(cause))
}

/// The credential provider's own error, kept as the [`source`](std::error::Error::source)
/// of the SDK's credential error. Its `Display` and `Debug` print none of it, and it has
/// no source of its own, so an error report that walks the chain cannot print the
/// provider's text (which may hold the bearer); [`ProviderError::get_ref`] hands it to code
/// that asks for it explicitly.
///
/// ```
/// use colossus_sdk::credentials::ProviderError;
///
/// fn provider_cause(err: &colossus_sdk::Error) -> Option<&colossus_sdk::Error> {
///     std::error::Error::source(err)?.downcast_ref::<ProviderError>().map(ProviderError::get_ref)
/// }
/// # let _ = provider_cause;
/// ```
pub struct ProviderError(Error);

impl ProviderError {
    /// The provider's error as it returned it. Its message may hold a secret: do not log it.
    pub fn get_ref(&self) -> &Error {
        &self.0
    }

    /// The provider's error as it returned it. Its message may hold a secret: do not log it.
    pub fn into_inner(self) -> Error {
        self.0
    }
}

impl std::fmt::Debug for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProviderError(<redacted>)")
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the credential provider's own error (not shown: it may hold the bearer)")
    }
}

impl std::error::Error for ProviderError {}

#[cfg(feature = "keyring")]
pub use keyring_provider::KeyringCredentialProvider;

#[cfg(feature = "keyring")]
mod keyring_provider {
    use super::*;

    /// Reads the bearer from the OS credential store (Secret Service on Linux, the
    /// Keychain on macOS, the Credential Manager on Windows) under a service and account.
    ///
    /// On a machine without a credential store (a headless server, a container) it fails
    /// with `KEYRING_UNAVAILABLE` and says what to do instead: enrol with `--bearer-fd` and
    /// pass the bearer through an [`InMemoryCredentialProvider`] or your own provider.
    #[derive(Debug, Clone)]
    pub struct KeyringCredentialProvider {
        service: String,
        account: String,
    }

    impl KeyringCredentialProvider {
        /// A provider for the entry `service` / `account`.
        pub fn new(service: impl Into<String>, account: impl Into<String>) -> Self {
            KeyringCredentialProvider {
                service: service.into(),
                account: account.into(),
            }
        }

        fn read(&self) -> Result<Bearer> {
            if self.service.is_empty() || self.account.is_empty() {
                let field = if self.service.is_empty() {
                    "service"
                } else {
                    "account"
                };
                return Err(Error::local(
                    Kind::InvalidArgument,
                    reasons::FIELD_INVALID,
                    "the keyring provider needs a service and an account",
                )
                .with_metadata("field", field));
            }
            let entry = keyring::Entry::new(&self.service, &self.account).map_err(unavailable)?;
            match entry.get_password() {
                Ok(value) => Bearer::new(value),
                Err(keyring::Error::NoEntry) => Err(Error::local(
                    Kind::Credential,
                    reasons::KEYRING_ENTRY_MISSING,
                    format!(
                        "no bearer is stored in the OS keyring for service {:?}, account {:?}",
                        self.service, self.account
                    ),
                )),
                Err(e) => Err(unavailable(e)),
            }
        }
    }

    fn unavailable(e: keyring::Error) -> Error {
        Error::local(
            Kind::Credential,
            reasons::KEYRING_UNAVAILABLE,
            "no OS keyring is available on this machine; enrol with --bearer-fd and pass the \
             bearer through an InMemoryCredentialProvider or your own CredentialProvider",
        )
        .with_source(e)
    }

    impl CredentialProvider for KeyringCredentialProvider {
        fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
            // The platform stores block (D-Bus round trips), so the read runs off the
            // async threads.
            let this = self.clone();
            Box::pin(async move {
                tokio::task::spawn_blocking(move || this.read())
                    .await
                    .map_err(|e| {
                        Error::local(
                            Kind::Credential,
                            reasons::PROVIDER_FAILED,
                            "the keyring read did not finish",
                        )
                        .with_source(e)
                    })?
            })
        }
    }
}

#[cfg(test)]
mod tests;
