//! The one way any connection to a worker is made: TCP to the checked loopback address,
//! then a TLS 1.3 handshake held to the pin by [`PinVerifier`], HTTP/2 agreed by ALPN.
//! tonic calls it for the first connection and for every reconnect, so no connection
//! escapes the checks. Session resumption is off: a resumed handshake would skip the
//! verifier.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin as StdPin;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rustls::client::Resumption;
use rustls::pki_types::ServerName;
use rustls::{AlertDescription, ClientConfig, PeerIncompatible, ProtocolVersion};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::verifier::{PinVerifier, TrustState, Violation};
use super::version_probe::speaks_tls12;
use crate::trust::pin::Pin;
use crate::{Code, Error, Kind, reasons};

/// The TLS configuration of one target: TLS 1.3 only, the pin verifier, ALPN `h2`, no
/// resumption, no client certificate.
pub(crate) fn tls_config(pin: Pin, state: Arc<TrustState>) -> Arc<ClientConfig> {
    // builder_with_provider, not builder(): the process-wide default provider may be
    // unset or another one, and this choice must not depend on the application's.
    let provider = Arc::new(super::provider::ring());
    let verifier = Arc::new(PinVerifier::new(pin, &provider, state));
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("the ring provider supports TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.resumption = Resumption::disabled();
    config.enable_early_data = false;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

/// How long the version probe after a failed handshake may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A stream tonic can speak HTTP/2 over.
pub(crate) type Connection = TokioIo<TlsStream<TcpStream>>;

type ConnectFuture = StdPin<Box<dyn Future<Output = Result<Connection, Error>> + Send>>;

/// The connector service for `Endpoint::connect_with_connector`: whatever URI tonic
/// asks for, it dials `addr` and nothing else.
pub(crate) fn connector(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    state: Arc<TrustState>,
    timeout: Duration,
) -> impl tower::Service<http::Uri, Response = Connection, Error = Error, Future = ConnectFuture>
+ Clone
+ Send
+ 'static {
    tower::service_fn(move |_uri: http::Uri| -> ConnectFuture {
        let (config, state) = (config.clone(), state.clone());
        Box::pin(async move { connect(addr, config, &state, timeout).await })
    })
}

/// Nothing accepted the TCP connection: a worker that is restarting, or gone.
fn unreachable(addr: SocketAddr) -> Error {
    Error::status(
        Kind::Transport,
        Code::Unavailable,
        Some(reasons::UNREACHABLE.to_owned()),
        format!("the worker at {addr} cannot be reached"),
    )
}

/// One connection attempt, each step bounded by `timeout`. A refusal is recorded in
/// `state` and returned as the typed error (a stalled handshake is `TLS_HANDSHAKE`); a
/// plain TCP failure is `UNREACHABLE` and keeps its `io::Error` as the source.
pub(crate) async fn connect(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    state: &TrustState,
    timeout: Duration,
) -> Result<Connection, Error> {
    let result = connect_once(addr, config, state, timeout).await;
    // Every connection, the first and each reconnect, passes here: one record per
    // verdict. Nothing logged holds the bearer, which no connection step has seen.
    match &result {
        Ok(_) => tracing::debug!(%addr, "TLS 1.3 handshake verified against the pin"),
        Err(e) if e.is(Kind::Trust) => tracing::warn!(
            %addr,
            reason = e.reason().unwrap_or_default(),
            "trust check refused the worker's connection"
        ),
        Err(e) => {
            tracing::debug!(%addr, reason = e.reason().unwrap_or_default(), "connection failed")
        }
    }
    result
}

async fn connect_once(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    state: &TrustState,
    timeout: Duration,
) -> Result<Connection, Error> {
    state.clear();
    let tcp = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => return Err(unreachable(addr).with_source(e)),
        Err(_) => return Err(unreachable(addr)),
    };
    let _ = tcp.set_nodelay(true);
    let handshake =
        TlsConnector::from(config).connect(ServerName::IpAddress(addr.ip().into()), tcp);
    let tls = match tokio::time::timeout(timeout, handshake).await {
        Ok(Ok(tls)) => tls,
        Err(_) => {
            state.record(Violation::Handshake);
            return Err(Violation::Handshake.to_error());
        }
        // Closed before any TLS answer: a worker that is stopping or restarting, unless
        // the probe shows a TLS 1.2 server (some end a TLS-1.3-only hello that way).
        // Nothing TLS was said, so nothing else proves a policy refusal: a retryable
        // transport failure that spends an attempt, as in Go.
        Ok(Err(e))
            if state.violation().is_none()
                && closed_before_tls(&e)
                && !speaks_tls12(addr, PROBE_TIMEOUT).await =>
        {
            return Err(Error::status(
                Kind::Transport,
                Code::Unavailable,
                None,
                format!("the worker at {addr} closed the connection before any TLS answer"),
            )
            .with_source(e));
        }
        Ok(Err(e)) => {
            let mut v = state.violation().unwrap_or_else(|| classify(&e));
            if v == Violation::Handshake && speaks_tls12(addr, PROBE_TIMEOUT).await {
                v = Violation::Version;
            }
            state.record(v);
            return Err(v.to_error().with_source(e));
        }
    };
    let (_, session) = tls.get_ref();
    let refusal = if session.protocol_version() != Some(ProtocolVersion::TLSv1_3) {
        Some(Violation::Version)
    } else if session.alpn_protocol() != Some(b"h2") {
        Some(Violation::Alpn)
    } else {
        None
    };
    if let Some(v) = refusal {
        state.record(v);
        return Err(v.to_error());
    }
    Ok(TokioIo::new(tls))
}

/// The connection ended (closed or reset) before the server sent any TLS record: an
/// I/O error that is not rustls's own verdict on something the server said.
fn closed_before_tls(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    let said_something = e
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some());
    !said_something
        && matches!(
            e.kind(),
            UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
        )
}

/// A failed handshake the verifier did not refuse: a server that speaks only TLS 1.2 (or
/// older) answers a TLS-1.3-only hello with a protocol_version alert or a hello rustls
/// cannot accept; anything else is a generic handshake failure.
fn classify(e: &std::io::Error) -> Violation {
    let Some(tls) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return Violation::Handshake;
    };
    match tls {
        rustls::Error::AlertReceived(AlertDescription::ProtocolVersion)
        | rustls::Error::PeerIncompatible(
            PeerIncompatible::ServerDoesNotSupportTls12Or13
            | PeerIncompatible::SupportedVersionsExtensionRequired
            | PeerIncompatible::Tls13RequiredForQuic,
        ) => Violation::Version,
        rustls::Error::PeerMisbehaved(m) if format!("{m:?}").contains("Version") => {
            Violation::Version
        }
        _ => Violation::Handshake,
    }
}
