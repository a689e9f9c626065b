//! The bearer (C5): validated when a provider hands it over, then held in a buffer that is
//! zeroed on drop and never printed (`Debug` shows `<redacted>`, there is no `Display`).

use zeroize::Zeroizing;

use crate::{Error, Kind, Result, reasons};

/// A validated bearer: 32-256 visible ASCII characters.
///
/// Credential providers return one; the SDK sends it only as the `authorization` header
/// of calls on a connection that passed every trust check. Its `Debug` output is
/// `Bearer(<redacted>)`, and its memory is zeroed when it is dropped.
///
/// ```
/// use colossus_sdk::Bearer;
///
/// let bearer = Bearer::new("an-example-bearer-of-32-or-more-chars".to_owned()).unwrap();
/// assert_eq!(format!("{bearer:?}"), "Bearer(<redacted>)");
/// assert!(Bearer::new("short".to_owned()).is_err());
/// ```
#[derive(Clone)]
pub struct Bearer(Zeroizing<String>);

impl Bearer {
    /// Validates `value`; the error never echoes it, not even in part.
    pub fn new(value: String) -> Result<Bearer> {
        let value = Zeroizing::new(value);
        if !is_valid_bearer(&value) {
            return Err(Error::local(
                Kind::Credential,
                reasons::BEARER_MALFORMED,
                "the bearer is malformed: it must be 32-256 visible ASCII characters",
            ));
        }
        Ok(Bearer(value))
    }

    /// The raw value, for the `authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(<redacted>)")
    }
}

/// The bearer grammar: 32-256 bytes, each visible ASCII (0x21-0x7e).
pub(crate) fn is_valid_bearer(value: &str) -> bool {
    (32..=256).contains(&value.len()) && value.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests;
