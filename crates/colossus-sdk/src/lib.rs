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
mod calls;
mod client;
mod convert;
pub mod credentials;
#[cfg(feature = "embedded")]
pub mod embedded;
mod error;
mod event_codec;
mod grpc;
pub mod model;
pub mod options;
mod outcome;
mod pagination;
pub mod placement;
mod proto;
mod rate_limit;
pub mod reasons;
mod request_cap;
mod requests;
mod retry;
mod runs;
pub mod security;
mod status;
#[cfg(test)]
mod testing;
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

// Bench support, inline rather than a file of its own so that the published file list
// stays what a user needs.
#[cfg(feature = "bench")]
#[doc(hidden)]
pub mod __bench {
    //! What `benches/figures/` needs to compare the SDK with a raw tonic client, behind the
    //! non-default `bench` feature. Not part of the SDK's API: hidden from the docs, no
    //! stability promise, and compiled only when the feature is asked for.
    //!
    //! The raw client is the generated stub on a channel the SDK's own way: the same endpoint
    //! settings and the same pinned TLS 1.3 connector (pin verifier, ALPN `h2`, no
    //! resumption) for its first connection and every reconnect. None of the SDK's work
    //! around it: no discovery files, no GetServerInfo checks, no retries, no watch rules.

    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Duration;

    use tonic::transport::Channel;

    use crate::transport::verifier::TrustState;
    use crate::transport::{connect_error, connector, endpoint};
    use crate::trust::pin::Pin;
    use crate::{Error, Kind, Result, reasons};

    /// The generated messages and client stubs the bench uses (its raw client, and the
    /// fake worker that serves its 100,000-event run).
    pub mod pb {
        pub use crate::proto::run_event::Payload;
        pub use crate::proto::run_service_client::RunServiceClient;
        pub use crate::proto::system_service_client::SystemServiceClient;
        pub use crate::proto::{
            DeploymentMode, GetRunRequest, GetRunResponse, GetServerInfoRequest,
            GetServerInfoResponse, Limits, OutputDelta, Run, RunEvent, RunStatus, RunTerminated,
            ServerInfo, WatchRunRequest, WatchRunResponse,
        };
    }

    /// A channel to `addr` whose every connection goes through the SDK's pinned TLS 1.3
    /// connector, held to `certificate_sha256` (64 lower-case hex characters). Connected
    /// once, without retries; a refused handshake is the SDK's typed trust error.
    pub async fn raw_channel(
        addr: SocketAddr,
        certificate_sha256: &str,
        connect_timeout: Duration,
    ) -> Result<Channel> {
        let pin = Pin::parse(certificate_sha256).ok_or_else(|| {
            Error::local(
                Kind::Descriptor,
                reasons::DESCRIPTOR_INVALID,
                "the pin is not 64 lower-case hex characters",
            )
        })?;
        let trust = Arc::new(TrustState::default());
        let config = connector::tls_config(pin, trust.clone());
        let connector = connector::connector(addr, config, trust.clone(), connect_timeout);
        endpoint(addr)?
            .connect_with_connector(connector)
            .await
            .map_err(|e| connect_error(&trust, e))
    }
}
