//! `certificate.pem` (C2): exactly one PEM leaf, strict base64, the shared DER shape
//! rules, then what an X.509 parser adds in the other SDKs: unique extensions, a
//! BasicConstraints extension, a P-256 point that lies on the curve, and an IP SAN naming
//! the endpoint's address.

use std::net::IpAddr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::certificate_shape::{
    OID_BASIC_CONSTRAINTS, OID_SAN, P256_SPKI_PREFIX, certificate_error, check_leaf_shape,
    elements, extension_elements, extension_parts, tbs_elements,
};
use super::pin::Pin;
use crate::Result;

/// The cap of `certificate.pem` (and of a bootstrap reply's copy).
pub(crate) const MAX_CERTIFICATE_BYTES: usize = 16 * 1024;

/// A validated end-entity certificate and its pin.
#[derive(Clone)]
pub(crate) struct LeafCertificate {
    pub(crate) pin: Pin,
}

impl std::fmt::Debug for LeafCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeafCertificate")
            .field("pin", &self.pin)
            .finish()
    }
}

/// Validates one PEM leaf: a single `CERTIFICATE` block of base64 lines of 1-76
/// characters, LF or CRLF line ends, nothing before or after it (no key, no bundle).
pub(crate) fn parse_leaf_certificate(pem: &[u8], host: Option<IpAddr>) -> Result<LeafCertificate> {
    let body = pem_body(pem).ok_or_else(|| {
        certificate_error(
            "the certificate must be exactly one PEM CERTIFICATE block with nothing else",
        )
    })?;
    let der = STANDARD
        .decode(body)
        .map_err(|_| certificate_error("the certificate's base64 body is malformed"))?;
    validate_leaf_der(&der, host)?;
    Ok(LeafCertificate {
        pin: Pin::of_der(&der),
    })
}

/// The base64 text of the one block, line ends removed; `None` when the armour is wrong.
fn pem_body(pem: &[u8]) -> Option<Vec<u8>> {
    let rest = pem.strip_prefix(b"-----BEGIN CERTIFICATE-----")?;
    let mut rest = strip_line_end(rest)?;
    let mut body = Vec::new();
    let mut lines = 0;
    loop {
        if let Some(tail) = rest.strip_prefix(b"-----END CERTIFICATE-----") {
            let done = tail.is_empty() || tail == b"\n" || tail == b"\r\n";
            return (done && lines > 0).then_some(body);
        }
        let len = rest
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')))?;
        if !(1..=76).contains(&len) {
            return None;
        }
        body.extend_from_slice(&rest[..len]);
        rest = strip_line_end(&rest[len..])?;
        lines += 1;
    }
}

fn strip_line_end(s: &[u8]) -> Option<&[u8]> {
    s.strip_prefix(b"\n").or_else(|| s.strip_prefix(b"\r\n"))
}

/// Checks a DER certificate: the shape rules, CA=false, a valid P-256 key and, with
/// `host`, an IP SAN for that exact address (`::ffff:127.0.0.1` does not name 127.0.0.1).
pub(crate) fn validate_leaf_der(der: &[u8], host: Option<IpAddr>) -> Result<()> {
    check_leaf_shape(der)?;
    let tbs = tbs_elements(der)?;
    let mut seen: Vec<&[u8]> = Vec::new();
    let mut basic_constraints = false;
    let mut ip_sans: Vec<&[u8]> = Vec::new();
    for e in extension_elements(&tbs)? {
        let (oid, value) = extension_parts(e)?;
        if seen.contains(&oid) {
            return Err(certificate_error(
                "the certificate contains duplicate extensions",
            ));
        }
        seen.push(oid);
        basic_constraints |= oid == OID_BASIC_CONSTRAINTS;
        if oid == OID_SAN {
            for name in elements(value.content)? {
                if name.tag == 0x87 {
                    ip_sans.push(name.content);
                }
            }
        }
    }
    if !basic_constraints {
        return Err(certificate_error(
            "the certificate has no BasicConstraints extension",
        ));
    }
    if !is_p256_point(&tbs[6].whole[P256_SPKI_PREFIX.len() - 1..]) {
        return Err(certificate_error("the certificate key must be ECDSA P-256"));
    }
    if let Some(host) = host {
        let want: Vec<u8> = match host {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        if !ip_sans.contains(&want.as_slice()) {
            return Err(certificate_error(
                "the certificate has no IP SAN for the endpoint address",
            ));
        }
    }
    Ok(())
}

/// Whether the 65-byte uncompressed point lies on P-256: ring validates a peer's public
/// key (range and curve equation) before an ECDH agreement, so one agreement with a
/// throwaway key answers the question.
fn is_p256_point(point: &[u8]) -> bool {
    use ring::agreement::{ECDH_P256, EphemeralPrivateKey, UnparsedPublicKey, agree_ephemeral};
    let rng = ring::rand::SystemRandom::new();
    let Ok(ours) = EphemeralPrivateKey::generate(&ECDH_P256, &rng) else {
        return false;
    };
    agree_ephemeral(ours, &UnparsedPublicKey::new(&ECDH_P256, point), |_| ()).is_ok()
}
