//! The rustls server-certificate verifier of every connection (C4): the presented leaf
//! alone (any intermediate is refused), its SHA-256 equal to the pin (compared in constant
//! time), TLS 1.3 signatures only, checked with the provider's algorithms. Whatever it
//! refuses is recorded in [`TrustState`], so the refusal reaches the caller as a typed
//! error even after rustls, hyper and tonic have each wrapped it.

use std::sync::{Arc, Mutex};

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use crate::trust::pin::Pin;
use crate::{Error, Kind, reasons};

/// A trust refusal, small and copyable so it can be recorded and reported more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Violation {
    /// The handshake was not TLS 1.3 (or the server asked for a TLS 1.2 signature).
    Version,
    /// The server presented this many certificates instead of its one leaf.
    Chain(usize),
    /// The leaf does not hash to the pin.
    Pin,
    /// The server did not agree to HTTP/2 through ALPN.
    Alpn,
    /// The handshake failed for another reason.
    Handshake,
}

impl Violation {
    /// The SDK error for this refusal.
    pub(crate) fn to_error(self) -> Error {
        match self {
            Violation::Version => Error::local(
                Kind::TlsPolicy,
                reasons::TLS_VERSION,
                "the worker did not negotiate TLS 1.3",
            ),
            Violation::Chain(n) => Error::local(
                Kind::TlsPolicy,
                reasons::TLS_CHAIN,
                format!(
                    "the worker presented {n} certificates; exactly one pinned leaf is allowed"
                ),
            ),
            Violation::Pin => Error::local(
                Kind::PinMismatch,
                reasons::PIN_MISMATCH,
                "the worker presented a certificate that does not hash to the provisioned pin",
            ),
            Violation::Alpn => Error::local(
                Kind::TlsPolicy,
                reasons::TLS_HANDSHAKE,
                "the worker did not negotiate HTTP/2 (ALPN h2)",
            ),
            Violation::Handshake => Error::local(
                Kind::TlsPolicy,
                reasons::TLS_HANDSHAKE,
                "the TLS 1.3 handshake with the worker failed",
            ),
        }
    }
}

/// What the connector and the verifier learned, shared with the error mapping.
#[derive(Debug, Default)]
pub(crate) struct TrustState {
    last: Mutex<Option<Violation>>,
}

impl TrustState {
    pub(crate) fn record(&self, v: Violation) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
    }

    /// The refusal of the most recent failed handshake, if any (kept until a handshake
    /// succeeds: every call failing on that connection is named by it).
    pub(crate) fn violation(&self) -> Option<Violation> {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn clear(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// The verifier of one target's pin.
#[derive(Debug)]
pub(crate) struct PinVerifier {
    pin: Pin,
    algorithms: WebPkiSupportedAlgorithms,
    state: Arc<TrustState>,
}

impl PinVerifier {
    pub(crate) fn new(pin: Pin, provider: &CryptoProvider, state: Arc<TrustState>) -> Self {
        PinVerifier {
            pin,
            algorithms: provider.signature_verification_algorithms,
            state,
        }
    }

    fn refuse(&self, v: Violation) -> rustls::Error {
        self.state.record(v);
        rustls::Error::General(v.to_error().message().to_owned())
    }
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if !intermediates.is_empty() {
            return Err(self.refuse(Violation::Chain(1 + intermediates.len())));
        }
        if !Pin::of_der(end_entity).matches(&self.pin) {
            return Err(self.refuse(Violation::Pin));
        }
        Ok(ServerCertVerified::assertion())
    }

    /// Never: the configuration offers TLS 1.3 only, and a server that gets this far
    /// with TLS 1.2 is refused here too.
    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(self.refuse(Violation::Version))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
