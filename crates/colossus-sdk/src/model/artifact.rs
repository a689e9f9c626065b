//! Stored artifacts: [`Artifact`] and [`DownloadedArtifact`].

use std::time::SystemTime;

/// A stored artifact's description.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// Its ID (reference it with [`InputPart::artifact`](crate::model::InputPart::artifact)).
    pub artifact_id: String,
    /// Its media type (`text/plain`).
    pub media_type: String,
    /// Its length in bytes.
    pub size_bytes: u64,
    /// Its SHA-256, 64 lower-case hex digits.
    pub sha256: String,
    /// Its display name (empty when none).
    pub display_name: String,
    /// When it was stored.
    pub create_time: SystemTime,
}

impl Artifact {
    /// An artifact description stored now.
    pub fn new(
        artifact_id: impl Into<String>,
        media_type: impl Into<String>,
        size_bytes: u64,
        sha256: impl Into<String>,
    ) -> Self {
        Artifact {
            artifact_id: artifact_id.into(),
            media_type: media_type.into(),
            size_bytes,
            sha256: sha256.into(),
            display_name: String::new(),
            create_time: SystemTime::now(),
        }
    }
}

/// An artifact and its bytes, verified against its declared length and SHA-256.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadedArtifact {
    /// The description.
    pub artifact: Artifact,
    /// The verified bytes.
    pub data: Vec<u8>,
}

/// What an upload declares before its bytes: checked locally, then bound on the worker.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactManifest {
    /// The media type.
    pub media_type: String,
    /// The exact length.
    pub size_bytes: u64,
    /// The SHA-256 of the bytes, 64 lower-case hex digits.
    pub sha256: String,
    /// The display name (empty when none).
    pub display_name: String,
}

/// One message of a download stream: the description first, then the chunks.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownloadPart {
    /// The artifact's description.
    Artifact(Artifact),
    /// A piece of its bytes.
    Chunk(Vec<u8>),
}
