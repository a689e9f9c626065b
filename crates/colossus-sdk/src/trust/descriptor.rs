//! Discovery: `endpoint.json` (C1) and the endpoint strings it and the sidecar bootstrap
//! carry, and the cross-check of both discovery files against the provisioned identity
//! (C1-C3).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use super::certificate::{MAX_CERTIFICATE_BYTES, parse_leaf_certificate};
use super::owner_only_file::{check_private_dir, read_owner_only_file};
use super::pin::{Pin, is_pin};
use super::strict_json::{Value, member, parse_object};
use crate::{Error, Kind, Result, reasons};

/// The cap of `endpoint.json`.
pub(crate) const MAX_DESCRIPTOR_BYTES: usize = 4 * 1024;
/// The one API version a descriptor may name.
pub(crate) const API_VERSION: &str = "v1alpha1";
/// A process ID is a signed 32-bit `pid_t` wherever a worker runs.
const MAX_PID: i64 = i32::MAX as i64;
const DESCRIPTOR_KEYS: [&str; 5] = [
    "api_version",
    "certificate_sha256",
    "endpoint",
    "instance_id",
    "pid",
];

/// A literal loopback TLS endpoint: `127.0.0.1` or `::1`, and a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) addr: SocketAddr,
}

impl Endpoint {
    /// The host as the certificate's IP SAN must name it.
    pub(crate) fn host(&self) -> IpAddr {
        self.addr.ip()
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "https://{}", self.addr)
    }
}

fn descriptor_error(field: &str, message: impl Into<String>) -> Error {
    Error::local(Kind::Descriptor, reasons::DESCRIPTOR_INVALID, message)
        .with_metadata("field", field)
}

/// Accepts exactly `https://127.0.0.1:PORT` or `https://[::1]:PORT` (PORT 1-65535 without a
/// leading zero). Names (`localhost` too), other addresses, user info, paths, queries and
/// fragments are refused.
pub(crate) fn parse_endpoint(value: &str) -> Result<Endpoint> {
    let refused = || {
        descriptor_error(
            "endpoint",
            "endpoint must be https://127.0.0.1:PORT or https://[::1]:PORT with nothing else",
        )
    };
    let rest = value.strip_prefix("https://").ok_or_else(refused)?;
    let (ip, port) = if let Some(port) = rest.strip_prefix("127.0.0.1:") {
        (IpAddr::V4(Ipv4Addr::LOCALHOST), port)
    } else if let Some(port) = rest.strip_prefix("[::1]:") {
        (IpAddr::V6(Ipv6Addr::LOCALHOST), port)
    } else {
        return Err(refused());
    };
    let well_formed = (1..=5).contains(&port.len())
        && port.bytes().all(|b| b.is_ascii_digit())
        && !port.starts_with('0');
    if !well_formed {
        return Err(refused());
    }
    let port: u32 = port.parse().map_err(|_| refused())?;
    let port = u16::try_from(port)
        .map_err(|_| descriptor_error("endpoint", "endpoint port is out of range"))?;
    Ok(Endpoint {
        addr: SocketAddr::new(ip, port),
    })
}

/// Whether `text` is an opaque ID: 1-64 characters of `[A-Za-z0-9_-]`.
pub(crate) fn is_opaque_id(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A validated `endpoint.json`.
#[derive(Debug, Clone)]
pub(crate) struct Descriptor {
    pub(crate) endpoint: Endpoint,
    pub(crate) instance_id: String,
    #[allow(dead_code)] // read by humans in Debug output; no rule depends on it
    pub(crate) pid: i64,
    pub(crate) certificate_sha256: String,
}

/// Validates the bytes of `endpoint.json` (C1): at most 4 KiB of UTF-8 JSON, one object
/// with exactly its five members and no duplicates, each well formed.
pub(crate) fn parse_descriptor(raw: &[u8]) -> Result<Descriptor> {
    if raw.len() > MAX_DESCRIPTOR_BYTES {
        return Err(descriptor_error(
            "endpoint.json",
            format!("endpoint.json is larger than {MAX_DESCRIPTOR_BYTES} bytes"),
        ));
    }
    let obj = parse_object(raw)
        .map_err(|e| descriptor_error("endpoint.json", format!("endpoint.json {e}")))?;
    let mut unknown: Vec<&str> = obj
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !DESCRIPTOR_KEYS.contains(k))
        .collect();
    let missing: Vec<&str> = DESCRIPTOR_KEYS
        .iter()
        .copied()
        .filter(|k| member(&obj, k).is_none())
        .collect();
    if !unknown.is_empty() || !missing.is_empty() {
        unknown.sort_unstable();
        return Err(descriptor_error(
            "endpoint.json",
            format!("endpoint.json members are wrong (unknown: {unknown:?}, missing: {missing:?})"),
        ));
    }
    let text = |name: &str| member(&obj, name).and_then(Value::as_str);
    let endpoint = parse_endpoint(
        text("endpoint")
            .ok_or_else(|| descriptor_error("endpoint", "endpoint must be a string"))?,
    )?;
    let instance_id = text("instance_id")
        .filter(|s| is_opaque_id(s))
        .ok_or_else(|| {
            descriptor_error(
                "instance_id",
                "instance_id must be 1-64 characters of [A-Za-z0-9_-]",
            )
        })?;
    let pid = member(&obj, "pid")
        .and_then(Value::as_positive_int)
        .filter(|p| *p <= MAX_PID)
        .ok_or_else(|| {
            descriptor_error("pid", format!("pid must be an integer from 1 to {MAX_PID}"))
        })?;
    if text("api_version") != Some(API_VERSION) {
        return Err(descriptor_error(
            "api_version",
            format!("api_version must be \"{API_VERSION}\""),
        ));
    }
    let pin = text("certificate_sha256")
        .filter(|s| is_pin(s))
        .ok_or_else(|| {
            descriptor_error(
                "certificate_sha256",
                "certificate_sha256 must be 64 lower-case hex characters",
            )
        })?;
    Ok(Descriptor {
        endpoint,
        instance_id: instance_id.to_owned(),
        pid,
        certificate_sha256: pin.to_owned(),
    })
}

/// Reads and cross-checks the discovery files in `dir` against the provisioned identity
/// (C1-C3) and returns where to connect. The expected values come from the caller only:
/// nothing read here can change them.
pub(crate) fn discover(
    dir: &Path,
    expected_instance_id: &str,
    expected_pin: &Pin,
) -> Result<Endpoint> {
    let endpoint = check_files(dir, expected_instance_id, expected_pin);
    match &endpoint {
        Ok(e) => tracing::debug!(
            endpoint = %e.addr,
            instance_id = %expected_instance_id,
            "discovery files match the provisioned identity"
        ),
        Err(e) => tracing::warn!(
            reason = e.reason().unwrap_or_default(),
            dir = %dir.display(),
            "discovery files refused"
        ),
    }
    endpoint
}

fn check_files(dir: &Path, expected_instance_id: &str, expected_pin: &Pin) -> Result<Endpoint> {
    check_private_dir(
        dir,
        Kind::Descriptor,
        reasons::DESCRIPTOR_INVALID,
        "the public API directory",
    )?;
    let raw = read_owner_only_file(
        &dir.join("endpoint.json"),
        MAX_DESCRIPTOR_BYTES,
        Kind::Descriptor,
        reasons::DESCRIPTOR_INVALID,
    )?;
    let descriptor = parse_descriptor(&raw)?;
    let named = Pin::parse(&descriptor.certificate_sha256).expect("the descriptor checked its pin");
    if !named.matches(expected_pin) {
        return Err(Error::local(
            Kind::PinMismatch,
            reasons::PIN_MISMATCH,
            "endpoint.json names a certificate other than the provisioned pin",
        ));
    }
    if descriptor.instance_id != expected_instance_id {
        return Err(Error::local(
            Kind::PinMismatch,
            reasons::INSTANCE_MISMATCH,
            "endpoint.json names an instance other than the provisioned one",
        ));
    }
    let pem = read_owner_only_file(
        &dir.join("certificate.pem"),
        MAX_CERTIFICATE_BYTES,
        Kind::Certificate,
        reasons::CERTIFICATE_INVALID,
    )?;
    let certificate = parse_leaf_certificate(&pem, Some(descriptor.endpoint.host()))?;
    if !certificate.pin.matches(expected_pin) {
        return Err(Error::local(
            Kind::PinMismatch,
            reasons::PIN_MISMATCH,
            "certificate.pem does not hash to the provisioned pin",
        ));
    }
    Ok(descriptor.endpoint)
}

#[cfg(test)]
mod tests;
