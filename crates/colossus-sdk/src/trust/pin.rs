//! The pin: the SHA-256 of the worker's leaf certificate (DER), written as 64 lower-case
//! hex characters. Compared in constant time, so a timing side channel cannot tell an
//! attacker how much of a forged certificate's hash matched.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A certificate pin, always 32 bytes.
#[derive(Clone, Copy)]
pub(crate) struct Pin([u8; 32]);

impl Pin {
    /// Parses exactly 64 lower-case hex characters; anything else is `None`.
    pub(crate) fn parse(text: &str) -> Option<Pin> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = (lower_hex(pair[0])? << 4) | lower_hex(pair[1])?;
        }
        Some(Pin(out))
    }

    /// The pin of a DER certificate.
    pub(crate) fn of_der(der: &[u8]) -> Pin {
        Pin(Sha256::digest(der).into())
    }

    /// Constant-time equality.
    pub(crate) fn matches(&self, other: &Pin) -> bool {
        self.0.ct_eq(&other.0).into()
    }

    /// The 64-character lower-case hex form.
    pub(crate) fn to_hex(self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl std::fmt::Debug for Pin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pin({})", self.to_hex())
    }
}

fn lower_hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Whether `text` is a well-formed pin.
pub(crate) fn is_pin(text: &str) -> bool {
    Pin::parse(text).is_some()
}

#[cfg(test)]
mod tests;
