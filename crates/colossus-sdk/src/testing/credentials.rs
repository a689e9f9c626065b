//! A credential provider that counts how often it is asked: the proof that no bearer is
//! loaded before the trust checks pass (C5).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::Result;
use crate::backend::BoxFuture;
use crate::credentials::CredentialProvider;
use crate::trust::bearer::Bearer;

/// The bearer [`Counting`] hands out.
pub(crate) const BEARER: &str = "cb1_test-bearer-0123456789abcdefghijklmnopqrstu";

/// A provider that counts how often it is asked.
#[derive(Clone, Default)]
pub(crate) struct Counting(pub(crate) Arc<AtomicUsize>);

impl CredentialProvider for Counting {
    fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Bearer::new(BEARER.to_owned()) })
    }
}
