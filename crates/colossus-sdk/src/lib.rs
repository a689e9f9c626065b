//! Rust SDK for the Colossus agent worker's public application API
//! (`colossus.api.v1alpha1`).
//!
//! One [`Client`] API over three placements: a shared **daemon** worker, a private
//! **sidecar** worker the SDK supervises, and an **embedded** runtime called in process.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
pub mod model;
pub mod options;
mod proto;
pub mod reasons;
mod retry;
mod watch;

pub use error::{Code, Error, Kind, Result};
