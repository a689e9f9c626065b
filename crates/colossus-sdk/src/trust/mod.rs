//! The trust checks every connection depends on (C1-C5): the discovery files, the pin,
//! the bearer, and the TLS verifier that holds every handshake to them.

pub(crate) mod bearer;
pub(crate) mod certificate;
pub(crate) mod certificate_shape;
pub(crate) mod descriptor;
pub(crate) mod owner_only_file;
pub(crate) mod pin;
pub(crate) mod strict_json;
#[cfg(test)]
mod vectors;
