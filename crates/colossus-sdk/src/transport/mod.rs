//! The verified session every gRPC call runs on: a tonic channel whose every connection
//! goes through the pinned connector, the checked GetServerInfo answer, and the bearer,
//! loaded only once the worker's identity is proven.

pub(crate) mod connector;
pub(crate) mod provider;
mod server_info;
pub(crate) mod verifier;
mod version_probe;

use std::net::SocketAddr;
use std::sync::Arc;

use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::transport::{Channel, Endpoint};
use zeroize::Zeroizing;

use crate::credentials::{CredentialProvider, load_bearer};
use crate::grpc::GrpcSession;
use crate::model::{DeploymentMode, ServerInfo};
use crate::options::ClientOptions;
use crate::trust::bearer::Bearer;
use crate::trust::pin::Pin;
use crate::{Error, Kind, Result, reasons};
use verifier::TrustState;

/// Where to connect and whom to expect there: a checked loopback address, the pin, the
/// instance ID, API major and placement the worker must report (C3, C6).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    pub(crate) pin: Pin,
    pub(crate) instance_id: String,
    pub(crate) api_major: u32,
    pub(crate) mode: DeploymentMode,
}

/// One verified connection to a worker.
pub(crate) struct Session {
    channel: Channel,
    server_info: ServerInfo,
    bearer: Bearer,
    max_response_bytes: usize,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("instance_id", &self.server_info.instance_id)
            .field("bearer", &self.bearer)
            .finish_non_exhaustive()
    }
}

/// Inserts `authorization: Bearer …`, marked sensitive so HPACK never indexes it and
/// `Debug` of the metadata hides it.
fn authorize_with(bearer: &Bearer, metadata: &mut MetadataMap) -> Result<()> {
    let text = Zeroizing::new(format!("Bearer {}", bearer.expose()));
    let mut value: MetadataValue<_> = MetadataValue::try_from(text.as_str()).map_err(|_| {
        Error::local(
            Kind::Credential,
            reasons::BEARER_MALFORMED,
            "the bearer cannot be sent as a header",
        )
    })?;
    value.set_sensitive(true);
    metadata.insert("authorization", value);
    Ok(())
}

impl GrpcSession for Session {
    fn channel(&self) -> Channel {
        self.channel.clone()
    }

    fn server_info(&self) -> &ServerInfo {
        &self.server_info
    }

    fn authorize(&self, metadata: &mut MetadataMap) -> Result<()> {
        authorize_with(&self.bearer, metadata)
    }

    fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }
}

/// The channel settings of every session (the bench's raw client uses them too). The URI
/// only names the HTTP/2 authority; the connector dials the checked address whatever it
/// says. Plain "http" because TLS is the connector's, not tonic's.
pub(crate) fn endpoint(addr: SocketAddr) -> Result<Endpoint> {
    Endpoint::from_shared(format!("http://{addr}")).map_err(|e| {
        Error::local(Kind::Transport, reasons::UNREACHABLE, "bad endpoint").with_source(e)
    })
}

/// Connects to `target` and proves it (C4-C6): the TLS handshake under the pin policy
/// first, then the bearer (C5: the provider is not asked when any trust check failed),
/// then GetServerInfo, authenticated, checked against the target before anything else
/// may use the session.
pub(crate) async fn open_session(
    target: &Target,
    credentials: &dyn CredentialProvider,
    options: &ClientOptions,
) -> Result<Session> {
    let trust = Arc::new(TrustState::default());
    let config = connector::tls_config(target.pin, trust.clone());
    let endpoint = endpoint(target.addr)?;
    // The connector bounds each step (TCP, then the handshake) by the connect timeout.
    let connector = connector::connector(
        target.addr,
        config,
        trust.clone(),
        options.connect_timeout(),
    );
    // The first connection is retried like a read while nothing TLS was said (a worker
    // closing connections silently); a trust refusal ends it at once, and so does a refused
    // connection: nothing listens, which the caller should hear at once.
    let channel = crate::retry::connect_with_retries("connect", *options.retry(), || {
        let (endpoint, connector, trust) = (&endpoint, connector.clone(), &trust);
        async move {
            endpoint
                .connect_with_connector(connector)
                .await
                .map_err(|e| connect_error(trust, e))
        }
    })
    .await?;
    let bearer = load_bearer(credentials).await?;
    tracing::debug!("bearer loaded from the credential provider after the trust checks");
    let info = server_info::fetch(&channel, &bearer, options, &trust).await?;
    if let Err(e) = server_info::verify(&info, target) {
        tracing::warn!(
            reason = e.reason().unwrap_or_default(),
            instance_id = %info.instance_id,
            "GetServerInfo does not match the expected worker"
        );
        return Err(e);
    }
    tracing::info!(
        endpoint = %target.addr,
        instance_id = %info.instance_id,
        mode = ?info.deployment_mode,
        "connected"
    );
    let advertised = usize::try_from(info.limits.max_response_bytes).unwrap_or(usize::MAX);
    let max_response_bytes = match advertised {
        0 => options.max_response_bytes(),
        n => n.min(options.max_response_bytes()),
    };
    Ok(Session {
        channel,
        server_info: info,
        bearer,
        max_response_bytes,
    })
}

/// The typed error of a failed connect: the recorded trust refusal, else the connector's
/// own error found in the chain, else a transport failure.
pub(crate) fn connect_error(trust: &TrustState, e: tonic::transport::Error) -> Error {
    if let Some(v) = trust.violation() {
        return v.to_error().with_source(e);
    }
    if let Some(err) = find_sdk_error(&e) {
        // Rebuilt rather than moved: the chain only lends it.
        let copy = match err.code() {
            Some(code) => Error::status(
                err.kind(),
                code,
                err.reason().map(str::to_owned),
                err.message(),
            ),
            None => Error::local(err.kind(), err.reason().unwrap_or(""), err.message()),
        };
        return copy.with_source(e);
    }
    Error::status(
        Kind::Transport,
        crate::Code::Unavailable,
        Some(reasons::UNREACHABLE.to_owned()),
        "the worker cannot be reached",
    )
    .with_source(e)
}

/// The SDK error a wrapped failure carries somewhere in its source chain.
pub(crate) fn find_sdk_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cur) = next {
        if let Some(found) = cur.downcast_ref::<Error>() {
            return Some(found);
        }
        next = cur.source();
    }
    None
}

#[cfg(test)]
mod tests;
