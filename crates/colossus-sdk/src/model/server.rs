//! What the worker says about itself: [`ServerInfo`], its [`Limits`] and capabilities.

use std::time::Duration;

use super::DeploymentMode;

/// Capability names a worker may advertise ([`ServerInfo::has_capability`]).
pub mod capabilities {
    /// Artifact upload and download, and artifact input parts.
    pub const ARTIFACTS: &str = "artifacts";
    /// Text attachments.
    pub const TEXT_ATTACHMENTS: &str = "attachments.text";
    /// Image input parts.
    pub const IMAGE_INPUT: &str = "attachments.image_input";
    /// Delegation to other agents.
    pub const DELEGATION: &str = "delegation";
    /// Continuing a draft plan ([`PlanAction`](crate::model::PlanAction)).
    pub const PLANS_CONTINUE: &str = "plans.continue";
    /// RESEARCH runs.
    pub const RESEARCH: &str = "research";
}

/// The verified GetServerInfo answer.
///
/// ```
/// use colossus_sdk::model::{capabilities, ServerInfo};
///
/// let mut info = ServerInfo::default();
/// info.capabilities.push(capabilities::ARTIFACTS.to_owned());
/// assert!(info.has_capability(capabilities::ARTIFACTS));
/// assert!(!info.has_capability(capabilities::RESEARCH));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// The worker instance's ID.
    pub instance_id: String,
    /// The API package (`colossus.api.v1alpha1`).
    pub api_package: String,
    /// The API version string.
    pub api_version: String,
    /// The API major version.
    pub api_major: u32,
    /// The placement the worker runs as.
    pub deployment_mode: DeploymentMode,
    /// The capabilities it advertises (see [`capabilities`]).
    pub capabilities: Vec<String>,
    /// Every effective limit.
    pub limits: Limits,
    /// The worker's own version.
    pub server_version: String,
}

impl ServerInfo {
    /// Whether the worker advertises `capability`.
    pub fn has_capability(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }
}

/// A rate limit: a refill rate per second and a burst.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenBucket {
    /// Tokens added per second.
    pub refill_per_second: u32,
    /// The bucket's size.
    pub burst: u32,
}

/// Every effective limit the worker advertises (0 means "not advertised").
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(missing_docs)] // each field is named after its contract field
pub struct Limits {
    pub max_active_runs: u32,
    pub max_active_runs_per_application: u32,
    pub create_rate: TokenBucket,
    pub create_rate_per_application: TokenBucket,
    pub max_watches: u32,
    pub max_watches_per_application: u32,
    pub max_concurrent_list_runs: u32,
    pub max_concurrent_list_runs_per_application: u32,
    pub max_connections: u32,
    pub max_concurrent_streams_per_connection: u32,
    pub max_request_bytes: u64,
    pub max_response_bytes: u64,
    pub max_header_bytes: u64,
    pub max_events_per_run: u32,
    pub reserved_lifecycle_events: u32,
    pub max_input_parts: u32,
    pub max_input_bytes: u64,
    pub max_turns: u32,
    pub default_max_turns: u32,
    pub max_list_page_size: u32,
    pub max_list_status_filters: u32,
    pub max_artifact_bytes: u64,
    pub max_artifact_chunk_bytes: u32,
    pub handshake_timeout: Duration,
    pub max_connection_age: Duration,
}
