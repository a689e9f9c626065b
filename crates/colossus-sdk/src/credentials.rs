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

/// Asks `provider` for the bearer; a failure that is not already a credential error
/// becomes `PROVIDER_FAILED`. The provider's own error is dropped, not kept as the source:
/// its text may hold the very secret it failed to deliver, and `Debug` shows sources.
pub(crate) async fn load_bearer(provider: &dyn CredentialProvider) -> Result<Bearer> {
    provider.bearer().await.map_err(|e| {
        if e.is(Kind::Credential) {
            e
        } else {
            tracing::debug!(kind = ?e.kind(), "the credential provider failed");
            Error::local(
                Kind::Credential,
                reasons::PROVIDER_FAILED,
                "the credential provider failed",
            )
        }
    })
}

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
mod tests {
    use super::*;

    const SECRET: &str = "cb1_the-secret-the-provider-failed-to-deliver";

    struct Failing;
    impl CredentialProvider for Failing {
        fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
            Box::pin(async {
                Err(Error::local(
                    Kind::Internal,
                    "",
                    format!("vault down: {SECRET}"),
                ))
            })
        }
    }

    #[tokio::test]
    async fn a_failing_provider_is_a_credential_error_that_does_not_repeat_its_text() {
        let err = load_bearer(&Failing).await.unwrap_err();
        assert!(err.is(Kind::Credential));
        assert_eq!(err.reason(), Some(reasons::PROVIDER_FAILED));
        assert!(!format!("{err} {err:?}").contains(SECRET));
        let bearer = Bearer::new("b".repeat(40)).unwrap();
        let got = load_bearer(&InMemoryCredentialProvider::new(bearer))
            .await
            .unwrap();
        assert_eq!(got.expose(), "b".repeat(40));
    }

    #[cfg(feature = "keyring")]
    #[tokio::test]
    async fn the_keyring_provider_names_what_is_missing() {
        let err = KeyringCredentialProvider::new("", "a")
            .bearer()
            .await
            .unwrap_err();
        assert_eq!(err.reason(), Some(reasons::FIELD_INVALID));
        // Without a Secret Service (CI, containers) the refusal carries the headless hint;
        // with one, an entry that was never stored is KEYRING_ENTRY_MISSING.
        let err = KeyringCredentialProvider::new("colossus-sdk-test", "no-such-account-7f3a")
            .bearer()
            .await
            .unwrap_err();
        match err.reason() {
            Some(reasons::KEYRING_UNAVAILABLE) => assert!(err.message().contains("--bearer-fd")),
            other => assert_eq!(other, Some(reasons::KEYRING_ENTRY_MISSING)),
        }
    }
}
