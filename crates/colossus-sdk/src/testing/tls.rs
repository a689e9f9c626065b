//! Certificates for the TLS listeners of the tests: a worker's P-256 leaf, and a CA to
//! present beside it as a chain the pin policy must refuse.

use rustls::pki_types::CertificateDer;

/// A P-256 leaf for 127.0.0.1 (CA=false, as C2 asks) and its key.
pub(crate) struct Leaf {
    pub(crate) der: CertificateDer<'static>,
    pub(crate) key: Vec<u8>,
    pub(crate) pem: String,
}

pub(crate) fn leaf() -> Leaf {
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let cert = params.self_signed(&key).unwrap();
    Leaf {
        der: cert.der().clone(),
        key: key.serialize_der(),
        pem: cert.pem(),
    }
}

pub(crate) fn ca() -> CertificateDer<'static> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    params.self_signed(&key).unwrap().der().clone()
}
