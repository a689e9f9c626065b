//! Telling a TLS 1.2 server from a broken handshake. A server that speaks only TLS 1.2
//! answers a TLS-1.3-only hello with a generic handshake_failure (no cipher suite in
//! common), so after such a failure one more connection offers TLS 1.2 alone and notes
//! whether the server carries that handshake as far as its certificate. The probe stops
//! there, before any byte of application data: it never sends a request, trusts nothing,
//! and only decides between the reasons TLS_VERSION and TLS_HANDSHAKE.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Records that the server reached certificate verification, then refuses.
#[derive(Debug)]
struct StopAtCertificate {
    reached: AtomicBool,
    schemes: Vec<SignatureScheme>,
}

fn stop() -> rustls::Error {
    rustls::Error::General("version probe ends here".into())
}

impl ServerCertVerifier for StopAtCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.reached.store(true, Ordering::SeqCst);
        Err(stop())
    }

    fn verify_tls12_signature(
        &self,
        _m: &[u8],
        _c: &CertificateDer<'_>,
        _d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(stop())
    }

    fn verify_tls13_signature(
        &self,
        _m: &[u8],
        _c: &CertificateDer<'_>,
        _d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(stop())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes.clone()
    }
}

/// Whether the server at `addr` carries a TLS 1.2 handshake to its certificate. Called
/// only after a TLS 1.3 handshake with it failed, so `true` means it speaks TLS 1.2 and
/// not 1.3. `false` on any doubt (no answer, a timeout).
pub(crate) async fn speaks_tls12(addr: SocketAddr, timeout: Duration) -> bool {
    let provider = Arc::new(super::provider::ring());
    let verifier = Arc::new(StopAtCertificate {
        reached: AtomicBool::new(false),
        schemes: provider
            .signature_verification_algorithms
            .supported_schemes(),
    });
    let Ok(builder) = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12])
    else {
        return false;
    };
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    let attempt = async {
        if let Ok(tcp) = TcpStream::connect(addr).await {
            let connector = TlsConnector::from(Arc::new(config));
            // Always an error: the verifier refuses whatever it is shown.
            let _ = connector
                .connect(ServerName::IpAddress(addr.ip().into()), tcp)
                .await;
        }
    };
    let _ = tokio::time::timeout(timeout, attempt).await;
    verifier.reached.load(Ordering::SeqCst)
}
