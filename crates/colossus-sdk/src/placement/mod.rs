//! Where the worker runs: an installed shared [daemon](DaemonOptions), or a private
//! sidecar the SDK starts and supervises. Each turns its own inputs into a checked
//! connection target.

mod boundary;
mod daemon;
pub(crate) mod sidecar;

pub use boundary::ManagedExecutionBoundary;
pub(crate) use daemon::DaemonSessions;
pub use daemon::{API_MAJOR, DaemonOptions, DaemonOptionsBuilder};
pub use sidecar::{DEFAULT_SIDECAR_SCOPES, SidecarOptions, SidecarOptionsBuilder};
