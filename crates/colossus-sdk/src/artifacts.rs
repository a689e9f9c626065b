//! [`Artifacts`]: upload and download with size and digest checks (S6).

use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::calls::Calls;
use crate::model::{Artifact, ArtifactManifest, DownloadPart, DownloadedArtifact, capabilities};
use crate::requests;
use crate::{Error, Kind, Result, reasons};

/// `client.artifacts()` (needs the worker's `artifacts` capability; without it every call
/// fails before sending with [`Kind::CapabilityMissing`]).
#[derive(Debug, Clone, Copy)]
pub struct Artifacts<'c> {
    calls: &'c Calls,
}

impl<'c> Artifacts<'c> {
    pub(crate) fn new(calls: &'c Calls) -> Self {
        Artifacts { calls }
    }

    /// Stores `data` as an artifact of `media_type`; reference it in a run with
    /// [`InputPart::artifact`](crate::model::InputPart::artifact). The upload is bound to
    /// the data's exact length and SHA-256, and the stored description must match them.
    /// Never retried.
    pub async fn upload(&self, data: &[u8], media_type: &str) -> Result<Artifact> {
        self.upload_inner(data, media_type, None).await
    }

    /// [`upload`](Self::upload) with a display name (1-255 bytes, no path separators).
    pub async fn upload_named(
        &self,
        data: &[u8],
        media_type: &str,
        display_name: &str,
    ) -> Result<Artifact> {
        self.upload_inner(data, media_type, Some(display_name))
            .await
    }

    async fn upload_inner(
        &self,
        data: &[u8],
        media_type: &str,
        display_name: Option<&str>,
    ) -> Result<Artifact> {
        let backend = self.calls.backend()?;
        let info = self.calls.server_info().await?;
        requests::require_capability(&info, capabilities::ARTIFACTS, "an artifact upload")?;
        let size = data.len() as u64;
        let limit = info.limits.max_artifact_bytes;
        if limit > 0 && size > limit {
            return Err(Error::local(
                Kind::ResourceExhausted,
                reasons::ARTIFACT_TOO_LARGE,
                format!("the artifact is {size} bytes; the worker accepts {limit}"),
            )
            .with_metadata("limit", limit.to_string()));
        }
        requests::check_media_type(media_type)?;
        if let Some(name) = display_name {
            requests::check_display_name(name)?;
        }
        let digest = hex(&Sha256::digest(data));
        let manifest = ArtifactManifest {
            media_type: media_type.to_owned(),
            size_bytes: size,
            sha256: digest.clone(),
            display_name: display_name.unwrap_or_default().to_owned(),
        };
        let stored = self
            .calls
            .mutate(backend.upload_artifact(&manifest, data), None)
            .await?;
        if stored.size_bytes != size || stored.sha256 != digest {
            return Err(Error::local(
                Kind::ProtocolViolation,
                reasons::ARTIFACT_MISMATCH,
                "the worker stored an artifact that differs from the upload",
            ));
        }
        if !requests::is_opaque_id(&stored.artifact_id) {
            return Err(Error::local(
                Kind::ProtocolViolation,
                reasons::RESPONSE_MALFORMED,
                "the worker returned a malformed artifact ID",
            ));
        }
        Ok(stored)
    }

    /// An artifact's bytes, returned only after their length and SHA-256 match the
    /// declared ones ([`Kind::ArtifactIntegrity`] otherwise). Retried on `UNAVAILABLE`.
    pub async fn download(&self, artifact_id: &str) -> Result<DownloadedArtifact> {
        requests::check_id(artifact_id, "artifact_id")?;
        let backend = self.calls.backend()?;
        let info = self.calls.server_info().await?;
        requests::require_capability(&info, capabilities::ARTIFACTS, "an artifact download")?;
        let max = info.limits.max_artifact_bytes;
        self.calls
            .read("DownloadArtifact", None, || async move {
                let mut parts = backend.download_artifact(artifact_id).await?;
                let mut v = Verifier::new(artifact_id, max);
                while let Some(part) = parts.next().await {
                    v.feed(part?)?;
                }
                v.finish()
            })
            .await
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn order(message: &str) -> Error {
    Error::local(
        Kind::ProtocolViolation,
        reasons::ARTIFACT_STREAM_ORDER,
        message,
    )
}

fn integrity(reason: &str, message: &str) -> Error {
    Error::local(Kind::ArtifactIntegrity, reason, message)
}

/// Checks one download stream: description first, then at most the declared bytes,
/// then the exact length and digest.
struct Verifier<'a> {
    artifact_id: &'a str,
    max_bytes: u64,
    artifact: Option<Artifact>,
    hash: Sha256,
    data: Vec<u8>,
}

impl<'a> Verifier<'a> {
    fn new(artifact_id: &'a str, max_bytes: u64) -> Self {
        Verifier {
            artifact_id,
            max_bytes,
            artifact: None,
            hash: Sha256::new(),
            data: Vec::new(),
        }
    }

    fn feed(&mut self, part: DownloadPart) -> Result<()> {
        match part {
            DownloadPart::Artifact(a) => {
                if self.artifact.is_some() {
                    return Err(order("the download sent its description twice"));
                }
                if a.artifact_id != self.artifact_id {
                    return Err(order("the download described another artifact"));
                }
                if self.max_bytes > 0 && a.size_bytes > self.max_bytes {
                    return Err(integrity(
                        reasons::ARTIFACT_TOO_LARGE,
                        "the artifact is larger than the worker's advertised limit",
                    ));
                }
                self.data = Vec::with_capacity(a.size_bytes.min(1 << 20) as usize);
                self.artifact = Some(a);
            }
            DownloadPart::Chunk(chunk) => {
                let Some(a) = &self.artifact else {
                    return Err(order("the download did not start with its description"));
                };
                if self.data.len() as u64 + chunk.len() as u64 > a.size_bytes {
                    return Err(integrity(
                        reasons::ARTIFACT_SIZE_MISMATCH,
                        "the download sent more bytes than declared",
                    ));
                }
                self.hash.update(&chunk);
                self.data.extend_from_slice(&chunk);
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<DownloadedArtifact> {
        let Some(artifact) = self.artifact else {
            return Err(order("the download ended before its description"));
        };
        if self.data.len() as u64 != artifact.size_bytes {
            return Err(integrity(
                reasons::ARTIFACT_SIZE_MISMATCH,
                "the download ended before all declared bytes",
            ));
        }
        let sum = hex(&self.hash.finalize());
        if !bool::from(sum.as_bytes().ct_eq(artifact.sha256.as_bytes())) {
            return Err(integrity(
                reasons::ARTIFACT_DIGEST_MISMATCH,
                "the downloaded bytes do not match the declared SHA-256",
            ));
        }
        Ok(DownloadedArtifact {
            artifact,
            data: self.data,
        })
    }
}

#[cfg(test)]
mod tests;
