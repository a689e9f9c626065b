//! [`desktop_release_channel`]: the one zero-input metadata operation (B10).

use serde::Serialize;

/// The release channel this build was compiled for. Nothing else about the build (no
/// signing identity, path, credential or runtime authority) is exposed beside it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseChannel {
    /// A local development build (the default).
    Development,
    /// A signed, notarized release.
    Stable,
    /// An ad-hoc signed preview for time-bounded testing; the renderer keeps a warning up.
    DeveloperPreview,
    /// A build for validation only.
    ValidationOnly,
}

impl ReleaseChannel {
    const fn parse(text: &str) -> ReleaseChannel {
        match text.as_bytes() {
            b"development" => ReleaseChannel::Development,
            b"stable" => ReleaseChannel::Stable,
            b"developer_preview" => ReleaseChannel::DeveloperPreview,
            b"validation_only" => ReleaseChannel::ValidationOnly,
            _ => panic!(
                "COLOSSUS_DESKTOP_RELEASE_CHANNEL must be development, stable, developer_preview or validation_only"
            ),
        }
    }
}

/// The channel, fixed when this crate is compiled from `COLOSSUS_DESKTOP_RELEASE_CHANNEL`
/// (unset: development; any other value fails the build).
pub const RELEASE_CHANNEL: ReleaseChannel = match option_env!("COLOSSUS_DESKTOP_RELEASE_CHANNEL") {
    Some(text) => ReleaseChannel::parse(text),
    None => ReleaseChannel::Development,
};

/// The compile-time release channel. Takes no input and needs no runtime, so the renderer
/// can label a Developer Preview even when runtime initialisation failed.
pub fn desktop_release_channel() -> ReleaseChannel {
    RELEASE_CHANNEL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_serializes_as_one_bare_token() {
        let text = serde_json::to_string(&desktop_release_channel()).unwrap();
        assert!(
            [
                "\"development\"",
                "\"stable\"",
                "\"developer_preview\"",
                "\"validation_only\""
            ]
            .contains(&text.as_str()),
            "{text}"
        );
    }
}
