//! What a target is to the renderer: an opaque [`TargetId`], a [`TargetKind`] and a
//! sanitized [`TargetHealth`].

use serde::Serialize;

const PREFIX: &str = "tgt_";
const RANDOM_BYTES: usize = 16;

/// An opaque target ID: `tgt_` and 32 lower-case hex characters from the OS random
/// source. Never derived from a path, endpoint, pin or instance ID, so it tells the
/// renderer nothing about where or what the target is, and a renderer cannot forge one
/// that routes anywhere: the [`TargetManager`](crate::TargetManager) resolves it (B1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct TargetId(String);

impl TargetId {
    pub(crate) fn random() -> TargetId {
        let mut bytes = [0u8; RANDOM_BYTES];
        getrandom::fill(&mut bytes).expect("the OS random source failed");
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        TargetId(format!("{PREFIX}{hex}"))
    }

    /// Parses a renderer-supplied ID; `None` unless it has exactly the shape this crate
    /// issues (which says nothing about whether such a target exists).
    pub fn parse(text: &str) -> Option<TargetId> {
        let hex = text.strip_prefix(PREFIX)?;
        let ok = hex.len() == RANDOM_BYTES * 2
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| TargetId(text.to_owned()))
    }

    /// The ID as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TargetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a target is placed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// The application-owned sidecar for the active workspace (the default).
    ManagedLocal,
    /// A saved shared daemon, added after a native confirmation.
    External,
    /// An application-private runtime called in process.
    Embedded,
}

/// A target's health as the renderer may see it: a state and, when not ready, a closed
/// reason token. No endpoint, instance ID, pin, path or SDK message.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum TargetHealth {
    /// Added, not checked yet.
    Unknown,
    /// The last check or call succeeded.
    Ready,
    /// The last check or call failed in a way a retry may fix.
    Unavailable(crate::ErrorKind),
    /// The last check or call failed in a way a retry will not fix (trust, credential,
    /// incompatible server).
    Failed(crate::ErrorKind),
    /// Removed or closed; kept only until the renderer's next listing.
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_and_parse_only_in_their_own_shape() {
        let a = TargetId::random();
        let b = TargetId::random();
        assert_ne!(a, b);
        assert_eq!(TargetId::parse(a.as_str()), Some(a.clone()));
        for bad in [
            "",
            "tgt_",
            "tgt_0123",
            &a.as_str().to_uppercase(),
            &format!("{}0", a.as_str()),
            "tgt_/home/me/.local/state/colossus/",
            "https://127.0.0.1:7443",
        ] {
            assert_eq!(TargetId::parse(bad), None, "{bad}");
        }
    }
}
