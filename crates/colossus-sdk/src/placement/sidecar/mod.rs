//! The sidecar placement: a private worker the SDK spawns, bootstraps over inherited
//! pipes and supervises (conformance/docs/sidecar.md).

pub(crate) mod binding;
pub(crate) mod bootstrap;
mod options;
mod process;
mod supervisor;

pub use options::{DEFAULT_SIDECAR_SCOPES, SidecarOptions, SidecarOptionsBuilder};
pub(crate) use supervisor::SidecarSessions;

#[cfg(test)]
mod tests;
