//! [`ManagedExecutionBoundary`] (B15): how far a managed worker's effects may reach, chosen
//! explicitly by the host and carried to the sidecar as a versioned bootstrap field.

/// The execution boundary of a managed (sidecar) worker.
///
/// An axis of its own, independent of the access profile and the approval mode: the SDK
/// never infers it from either, and a renderer cannot choose it. The sidecar bootstrap
/// (version 2, conformance/docs/sidecar.md) carries it and the worker's reply must report
/// the same value, or the start fails.
///
/// ```
/// use colossus_sdk::placement::{ManagedExecutionBoundary, SidecarOptions};
///
/// let options = SidecarOptions::builder("colossus-reference-worker", "my-app")
///     .execution_boundary(ManagedExecutionBoundary::OfflineIsolated)
///     .build()?;
/// assert_eq!(options.execution_boundary(), ManagedExecutionBoundary::OfflineIsolated);
/// assert_eq!(ManagedExecutionBoundary::default(), ManagedExecutionBoundary::FullAccess);
/// # Ok::<(), colossus_sdk::Error>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ManagedExecutionBoundary {
    /// The default host posture (acknowledged `danger_full_access`): ambient structured
    /// filesystem and HTTP(S) effects and child processes, but no undeclared tools, routes,
    /// credentials, MCP servers, integrations or extension trust.
    #[default]
    FullAccess,
    /// The platform-native workspace-development boundary. A worker without one refuses to
    /// start (`boundary_unsupported`) rather than run wider.
    WorkspaceIsolated,
    /// Platform isolation without derived workspace resources; the generic model-visible
    /// `network.http`, `web.fetch` and `docs.fetch` tools are hidden, while the configured
    /// provider's own service and authentication destinations stay reachable (not an
    /// air gap).
    OfflineIsolated,
}

impl ManagedExecutionBoundary {
    /// The bootstrap token: `full_access`, `workspace_isolated` or `offline_isolated`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ManagedExecutionBoundary::FullAccess => "full_access",
            ManagedExecutionBoundary::WorkspaceIsolated => "workspace_isolated",
            ManagedExecutionBoundary::OfflineIsolated => "offline_isolated",
        }
    }
}

impl std::fmt::Display for ManagedExecutionBoundary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
