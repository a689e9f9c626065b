//! Rust SDK for the Colossus agent worker's public application API
//! (`colossus.api.v1alpha1`).
//!
//! One [`Client`] API over three placements: a shared **daemon** worker, a private
//! **sidecar** worker the SDK supervises, and an **embedded** runtime called in process.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod artifacts;
pub mod backend;
mod checks;
mod client;
mod convert;
pub mod credentials;
#[cfg(feature = "embedded")]
pub mod embedded;
mod error;
mod grpc;
pub mod model;
pub mod options;
pub mod placement;
mod proto;
pub mod reasons;
mod retry;
mod runs;
mod status;
mod transport;
mod trust;
mod watch;

pub use artifacts::Artifacts;
pub use client::Client;
pub use error::{Code, Error, Kind, Result};
pub use runs::Runs;
pub use trust::bearer::Bearer;
pub use watch::stream::{ReconnectInfo, Watch};

/// This SDK's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
