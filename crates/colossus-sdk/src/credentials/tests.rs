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

/// A provider that fails with a credential error of its own, its text holding `SECRET`.
struct FailingAsCredential(&'static str);
impl CredentialProvider for FailingAsCredential {
    fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
        let reason = self.0;
        Box::pin(async move {
            Err(
                Error::local(Kind::Credential, reason, format!("bad bearer {SECRET}"))
                    .with_metadata("bearer", SECRET),
            )
        })
    }
}

#[tokio::test]
async fn a_providers_credential_error_is_reported_in_the_sdks_own_words() {
    for (given, reported) in [
        (reasons::BEARER_MALFORMED, reasons::BEARER_MALFORMED),
        (reasons::KEYRING_UNAVAILABLE, reasons::KEYRING_UNAVAILABLE),
        (
            reasons::KEYRING_ENTRY_MISSING,
            reasons::KEYRING_ENTRY_MISSING,
        ),
        (reasons::PROVIDER_FAILED, reasons::PROVIDER_FAILED),
        ("VAULT_SEALED", reasons::PROVIDER_FAILED),
    ] {
        let err = load_bearer(&FailingAsCredential(given)).await.unwrap_err();
        assert!(err.is(Kind::Credential), "{given}");
        assert_eq!(err.reason(), Some(reported), "{given}");
        assert_eq!(err.code(), None);
        assert!(
            err.metadata().is_empty(),
            "the provider's metadata is not repeated"
        );
        let source = std::error::Error::source(&err).expect("the provider's error is the source");
        let shown = format!("{err} {err:?} {err:#?} {source} {source:?}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(
            source.source().is_none(),
            "an error-chain report stops at the wrapper"
        );
        // Code that asks for the provider's own error explicitly still gets it.
        let cause = source.downcast_ref::<ProviderError>().unwrap().get_ref();
        assert_eq!(cause.reason(), Some(given));
        assert!(cause.message().contains(SECRET));
    }
}

#[tokio::test]
async fn a_malformed_bearer_from_a_provider_is_bearer_malformed() {
    struct Malformed;
    impl CredentialProvider for Malformed {
        fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
            Box::pin(async { Bearer::new(format!("{SECRET} with spaces")) })
        }
    }
    let err = load_bearer(&Malformed).await.unwrap_err();
    assert_eq!(err.reason(), Some(reasons::BEARER_MALFORMED));
    assert!(!format!("{err} {err:?}").contains(SECRET));
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
