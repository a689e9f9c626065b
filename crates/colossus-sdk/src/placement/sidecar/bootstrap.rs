//! The bootstrap exchange with a sidecar worker (conformance/docs/sidecar.md): one framed
//! request, one framed reply, each a 4-byte big-endian length then that many bytes of one
//! JSON object. Every member of the reply is checked before anything in it is used.

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::trust::bearer::Bearer;
use crate::trust::certificate::{LeafCertificate, MAX_CERTIFICATE_BYTES, parse_leaf_certificate};
use crate::trust::descriptor::{API_VERSION, Endpoint, is_opaque_id, parse_endpoint};
use crate::trust::pin::{Pin, is_pin};
use crate::trust::strict_json::{Value, member, parse_object};
use crate::{Error, Kind, Result, reasons};

/// The frame cap, both directions.
pub(crate) const MAX_FRAME: usize = 65536;
/// The bootstrap protocol version of a reply without an execution boundary (the shared
/// parser vectors use it).
pub(crate) const VERSION: i64 = 1;
/// The version this SDK sends: 1 plus the `execution_boundary` member, which the reply
/// must report back unchanged.
pub(crate) const BOUNDARY_VERSION: i64 = 2;
const REPLY_KEYS: [&str; 8] = [
    "api_version",
    "bearer",
    "certificate_pem",
    "certificate_sha256",
    "credential_id",
    "endpoint",
    "instance_id",
    "version",
];

/// What the parent asks for: its state folder, application and grant.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) state_dir: String,
    pub(crate) application_id: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) roles: Vec<String>,
    pub(crate) tools: Vec<String>,
    pub(crate) execution_boundary: crate::placement::ManagedExecutionBoundary,
}

/// The request as one frame.
pub(crate) fn encode_request(request: &Request) -> Result<Vec<u8>> {
    let body = serde_json::json!({
        "version": BOUNDARY_VERSION,
        "execution_boundary": request.execution_boundary.as_str(),
        "state_dir": request.state_dir,
        "application_id": request.application_id,
        "grant": {"scopes": request.scopes, "roles": request.roles, "tools": request.tools},
    })
    .to_string();
    if body.len() > MAX_FRAME {
        return Err(Error::local(
            Kind::Sidecar,
            reasons::BOOTSTRAP_TOO_LARGE,
            "the bootstrap request is larger than 64 KiB",
        ));
    }
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(body.as_bytes());
    Ok(frame)
}

/// Reads one frame, refusing a declared length over the cap before reading the body.
/// End of input before a whole frame is `BOOTSTRAP_EOF`; another read failure `BOOTSTRAP_IO`.
pub(crate) async fn read_frame(r: &mut (impl AsyncRead + Unpin)) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::local(
                Kind::Sidecar,
                reasons::BOOTSTRAP_EOF,
                "the sidecar closed its bootstrap pipe before a whole reply",
            )
        } else {
            Error::local(
                Kind::Sidecar,
                reasons::BOOTSTRAP_IO,
                "reading the bootstrap reply failed",
            )
            .with_source(e)
        }
    };
    let mut header = [0u8; 4];
    r.read_exact(&mut header).await.map_err(io)?;
    let n = u32::from_be_bytes(header) as usize;
    if n > MAX_FRAME {
        return Err(malformed(
            "reply",
            "the bootstrap reply is larger than 64 KiB",
        ));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body).await.map_err(io)?;
    Ok(body)
}

/// A validated success reply. The bearer lives only here, in memory.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) endpoint: Endpoint,
    pub(crate) instance_id: String,
    pub(crate) certificate: LeafCertificate,
    #[allow(dead_code)] // kept for diagnostics; no rule reads it
    pub(crate) credential_id: String,
    pub(crate) bearer: Bearer,
}

fn malformed(field: &str, message: impl Into<String>) -> Error {
    Error::local(Kind::Sidecar, reasons::BOOTSTRAP_MALFORMED, message).with_metadata("field", field)
}

/// Keeps a worker-supplied token printable and short before it enters an error.
fn safe_text(text: &str, limit: usize) -> String {
    text.chars()
        .take(limit)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Validates every member of a reply before anything is used. A refusal reply becomes
/// `BOOTSTRAP_REFUSED` carrying the worker's code; a pin that differs from the
/// certificate's hash is a trust failure (`PIN_MISMATCH`); anything else malformed is
/// `BOOTSTRAP_MALFORMED` naming the member.
#[cfg(test)]
pub(crate) fn parse_reply(body: &[u8]) -> Result<Reply> {
    parse_reply_for(body, None)
}

/// As [`parse_reply`] for a request that carried `boundary` (version 2): the reply must
/// have version 2 and report exactly that boundary.
pub(crate) fn parse_reply_for(
    body: &[u8],
    boundary: Option<crate::placement::ManagedExecutionBoundary>,
) -> Result<Reply> {
    let mut obj =
        parse_object(body).map_err(|e| malformed("reply", format!("the bootstrap reply {e}")))?;
    let version = if boundary.is_some() {
        BOUNDARY_VERSION
    } else {
        VERSION
    };
    if member(&obj, "version").and_then(Value::as_positive_int) != Some(version) {
        return Err(malformed(
            "version",
            "the bootstrap reply has an unknown version",
        ));
    }
    if let Some(failure) = member(&obj, "error") {
        let Value::Object(fields) = failure else {
            return Err(malformed("error", "the bootstrap error reply is malformed"));
        };
        let text = |name: &str| match member(fields, name) {
            None | Some(Value::Null) => Some(""),
            Some(v) => v.as_str(),
        };
        let (Some(code), Some(message)) = (text("code"), text("message")) else {
            return Err(malformed("error", "the bootstrap error reply is malformed"));
        };
        if obj.len() != 2 {
            return Err(malformed("error", "the bootstrap error reply is malformed"));
        }
        let code = Some(safe_text(code, 64)).filter(|c| !c.is_empty());
        return Err(Error::local(
            Kind::Sidecar,
            reasons::BOOTSTRAP_REFUSED,
            format!("the sidecar refused to start: {}", safe_text(message, 512)),
        )
        .with_metadata("code", code.unwrap_or_else(|| "unknown".into())));
    }
    if let Some(boundary) = boundary {
        let reported = member(&obj, "execution_boundary").and_then(Value::as_str);
        if reported != Some(boundary.as_str()) {
            return Err(malformed(
                "execution_boundary",
                "the sidecar did not report the requested execution boundary",
            ));
        }
        obj.retain(|(k, _)| k != "execution_boundary");
    }
    let mut keys: Vec<&str> = obj.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if keys != REPLY_KEYS {
        return Err(malformed(
            "reply",
            format!("the bootstrap reply members are wrong: {keys:?}"),
        ));
    }
    let text = |name: &str| member(&obj, name).and_then(Value::as_str);
    let endpoint = text("endpoint")
        .ok_or_else(|| malformed("endpoint", "the bootstrap endpoint must be a string"))
        .and_then(|e| {
            parse_endpoint(e).map_err(|_| {
                malformed(
                    "endpoint",
                    "the bootstrap endpoint must be https://127.0.0.1:PORT or https://[::1]:PORT",
                )
            })
        })?;
    let instance_id = text("instance_id")
        .filter(|s| is_opaque_id(s))
        .ok_or_else(|| malformed("instance_id", "the bootstrap instance_id is malformed"))?;
    let credential_id = text("credential_id")
        .filter(|s| is_opaque_id(s))
        .ok_or_else(|| malformed("credential_id", "the bootstrap credential_id is malformed"))?;
    if text("api_version") != Some(API_VERSION) {
        return Err(malformed(
            "api_version",
            format!("the bootstrap api_version is not {API_VERSION}"),
        ));
    }
    let pin = text("certificate_sha256")
        .filter(|s| is_pin(s))
        .and_then(Pin::parse)
        .ok_or_else(|| {
            malformed(
                "certificate_sha256",
                "the bootstrap certificate_sha256 is malformed",
            )
        })?;
    // The cap of the daemon's certificate.pem holds for the reply's copy too.
    let pem = text("certificate_pem")
        .filter(|p| p.len() <= MAX_CERTIFICATE_BYTES)
        .ok_or_else(|| {
            malformed(
                "certificate_pem",
                "the bootstrap certificate_pem is malformed",
            )
        })?;
    let certificate =
        parse_leaf_certificate(pem.as_bytes(), Some(endpoint.host())).map_err(|e| {
            malformed(
                "certificate_pem",
                format!("the bootstrap certificate is unusable: {}", e.message()),
            )
        })?;
    if !certificate.pin.matches(&pin) {
        return Err(Error::local(
            Kind::PinMismatch,
            reasons::PIN_MISMATCH,
            "the bootstrap certificate does not hash to its pin",
        ));
    }
    let bearer = text("bearer")
        .and_then(|b| Bearer::new(b.to_owned()).ok())
        .ok_or_else(|| malformed("bearer", "the bootstrap bearer is malformed"))?;
    Ok(Reply {
        endpoint,
        instance_id: instance_id.to_owned(),
        certificate,
        credential_id: credential_id.to_owned(),
        bearer,
    })
}

#[cfg(test)]
mod tests;
