//! The rustls crypto provider of every connection the SDK makes: *ring*, chosen here once.
//!
//! rustls 0.23.48 deprecated `rustls::crypto::ring::default_provider` because *ring*
//! offers no post-quantum key exchange. The SDK keeps *ring* on purpose: every connection
//! is loopback TLS 1.3 to a P-256 leaf held to a pin, so a recorded exchange is not
//! carried over any network a future quantum adversary could tap, and *ring* needs no C
//! toolchain (aws-lc-rs does). The one call is made here, with the deprecation allowed and
//! explained, so the crate builds warning-free on the locked rustls and on the newest
//! compatible one alike (`./noxw -s rust_fresh_deps` builds both with `-D warnings`).

use rustls::crypto::CryptoProvider;

/// A fresh *ring* provider; the choice does not depend on the process-wide default, which
/// the application may have set to another provider or left unset.
pub(crate) fn ring() -> CryptoProvider {
    #[allow(deprecated)] // see the module documentation
    rustls::crypto::ring::default_provider()
}
