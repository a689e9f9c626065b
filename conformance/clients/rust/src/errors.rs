//! The protocol's language-neutral error view of an SDK error.

use colossus_sdk::{Error, Kind};
use serde_json::{Value, json};

/// What a step can fail with: an SDK error, or a step this client cannot express through
/// the SDK's API (reported as kind `unsupported`).
#[derive(Debug)]
pub(crate) enum StepError {
    Sdk(Error),
    Unsupported(String),
    /// A sync point that went wrong: a problem of the protocol, not of the SDK.
    Protocol(String),
}

impl From<Error> for StepError {
    fn from(err: Error) -> Self {
        StepError::Sdk(err)
    }
}

pub(crate) fn unsupported(what: impl Into<String>) -> StepError {
    StepError::Unsupported(what.into())
}

/// The SDK's kinds mapped to the protocol's, most specific first: the first kind the error
/// is (itself or beneath it) wins, the precedence of docs/client-protocol.md.
const KINDS: &[(Kind, &str, &str)] = &[
    (
        Kind::IncompatibleServer,
        "compatibility",
        "IncompatibleServer",
    ),
    (Kind::Descriptor, "trust", "Descriptor"),
    (Kind::Certificate, "trust", "Certificate"),
    (Kind::PinMismatch, "trust", "PinMismatch"),
    (Kind::TlsPolicy, "trust", "TlsPolicy"),
    (Kind::Trust, "trust", "Trust"),
    (Kind::Credential, "credential", "Credential"),
    (Kind::Sidecar, "sidecar", "Sidecar"),
    (Kind::WatchGap, "watch_gap", "WatchGap"),
    (Kind::ArtifactIntegrity, "integrity", "ArtifactIntegrity"),
    (Kind::DataLoss, "integrity", "DataLoss"),
    (
        Kind::ProtocolViolation,
        "protocol_violation",
        "ProtocolViolation",
    ),
    (Kind::OutcomeUnknown, "outcome_unknown", "OutcomeUnknown"),
    (Kind::DeadlineExceeded, "timeout", "DeadlineExceeded"),
    (Kind::WatchIdleTimeout, "timeout", "WatchIdleTimeout"),
    (Kind::Transport, "transport", "Transport"),
    (Kind::Authentication, "authentication", "Authentication"),
    (Kind::PermissionDenied, "permission", "PermissionDenied"),
    (Kind::NotFound, "not_found", "NotFound"),
    (
        Kind::IdempotencyConflict,
        "idempotency_conflict",
        "IdempotencyConflict",
    ),
    (Kind::InvalidArgument, "invalid_argument", "InvalidArgument"),
    (
        Kind::CapabilityMissing,
        "capability_missing",
        "CapabilityMissing",
    ),
    (
        Kind::FailedPrecondition,
        "failed_precondition",
        "FailedPrecondition",
    ),
    (
        Kind::ResourceExhausted,
        "resource_exhausted",
        "ResourceExhausted",
    ),
    (Kind::Internal, "internal", "Internal"),
];

const MAX_MESSAGE: usize = 2000;

/// The error object of a step report.
pub(crate) fn error_view(err: &StepError) -> Value {
    match err {
        StepError::Unsupported(what) => json!({
            "kind": "unsupported", "grpc_code": null, "reason": null, "sdk_type": "unsupported",
            "message": truncate(&format!("unsupported: {what}")),
        }),
        StepError::Protocol(what) => json!({
            "kind": "other", "grpc_code": null, "reason": null, "sdk_type": "protocol",
            "message": truncate(what),
        }),
        StepError::Sdk(e) => {
            let (kind, name) = KINDS
                .iter()
                .find(|(k, _, _)| e.is(*k))
                .map(|(_, kind, name)| (*kind, format!("Kind::{name}")))
                .unwrap_or_else(|| ("other", format!("Kind::{:?}", e.kind())));
            let mut view = json!({
                "kind": kind,
                "grpc_code": e.code().map(|c| c.as_str()),
                "reason": e.reason(),
                "sdk_type": name,
                "message": truncate(&e.to_string()),
            });
            if let Some(delay) = e.retry_delay() {
                view["retry_delay_seconds"] = json!(delay.as_secs_f64());
            }
            view
        }
    }
}

fn truncate(s: &str) -> String {
    if s.len() <= MAX_MESSAGE {
        return s.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// The text for the client's log: the error and its cause chain. A credential error's cause
/// is the provider's own error, which may hold its secret, so it is left out.
pub(crate) fn log_text(err: &StepError) -> String {
    match err {
        StepError::Sdk(e) if e.is(Kind::Credential) => e.to_string(),
        StepError::Sdk(e) => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                text.push_str(&format!(" (cause: {cause})"));
                source = cause.source();
            }
            text
        }
        StepError::Unsupported(what) => format!("unsupported: {what}"),
        StepError::Protocol(what) => what.clone(),
    }
}
