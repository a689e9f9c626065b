//! Rust SDK for the Colossus agent worker's public application API
//! (`colossus.api.v1alpha1`).
//!
//! One [`Client`] API over three placements: a shared **daemon** worker
//! (`Client::connect`), a private **sidecar** worker the SDK starts and supervises
//! (`Client::start_sidecar`), and an **embedded** runtime called in process
//! ([`Client::embedded`], with [`embedded::EmbeddedRuntime`] or a host's own
//! [`backend::Backend`]). The rules are the client's, whatever the placement: request
//! checks and capability gates before sending, read retries on `UNAVAILABLE` only,
//! mutations sent once, exactly-once watches reconciled at their end, verified artifacts
//! (S10 in the repository's docs/requirements.md).
//!
//! ```
//! # #[cfg(feature = "embedded")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> colossus_sdk::Result<()> {
//! use futures_util::TryStreamExt;
//! use colossus_sdk::{Client, embedded::EmbeddedRuntime, model::*};
//!
//! let client = Client::embedded(EmbeddedRuntime::new());
//! let created = client.runs().create(CreateRunRequest::text("Say hello")).await?;
//! let text: Vec<String> = client.runs().text_stream(&created.run.run_id).try_collect().await?;
//! assert_eq!(text.concat(), "Say hello");
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "embedded"))]
//! # fn main() {}
//! ```
//!
//! - [`model`]: what the SDK accepts and returns ([`model::CreateRunRequest`],
//!   [`model::Run`], [`model::RunEvent`]...);
//! - [`options`]: [`options::ClientOptions`] and [`options::RetryPolicy`], with the
//!   defaults every SDK of the family shares;
//! - [`Runs`], [`Watch`], [`Artifacts`]: the calls;
//! - [`Error`], [`Kind`], [`reasons`]: one error type, branched on by kind or reason.
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
pub mod security;
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

/// The README's Rust blocks, compiled (and the runnable ones run) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
