//! [`BridgeError`]: what a renderer learns when an operation fails. Errors are data: a
//! closed [`ErrorKind`], a reason token from the SDK's published list, whether a retry
//! may help and after how long, and the input field at fault. Never the SDK's message,
//! metadata, idempotency key or source chain: those can name paths, endpoints, pins or
//! worker text (B8).

use std::time::Duration;

use colossus_sdk::{Error, Kind, reasons};
use serde::Serialize;

/// The closed set of failure kinds a renderer branches on.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The input is not one of the accepted shapes (see `field`).
    InvalidInput,
    /// No such target, or it was removed.
    UnknownTarget,
    /// The operation names a target other than the current Work selection.
    NotSelected,
    /// The run ID was not created or listed through this target.
    RunNotBound,
    /// The target's watch limit is reached.
    WatchLimit,
    /// The user declined the native confirmation.
    Declined,
    /// The target does not offer this (a capability it does not advertise, or Research
    /// outside an application-owned target).
    Unsupported,
    /// The worker refused the caller's identity or credential.
    Authentication,
    /// The credential lacks a scope, role or tool.
    PermissionDenied,
    /// The run or interaction does not exist.
    NotFound,
    /// The worker refused the request's content.
    InvalidArgument,
    /// The run is not in a state that allows this.
    FailedPrecondition,
    /// A limit or rate was reached.
    ResourceExhausted,
    /// The target cannot be reached now.
    Unavailable,
    /// The call timed out.
    DeadlineExceeded,
    /// A mutation may or may not have happened; it is never retried automatically.
    OutcomeUnknown,
    /// The target failed a trust check (pin, certificate, descriptor, TLS policy,
    /// incompatible server).
    Trust,
    /// The target's worker failed or broke the protocol.
    Internal,
    /// The target was closed.
    Closed,
}

/// A failure as the renderer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeError {
    /// What failed.
    pub kind: ErrorKind,
    /// A reason token from the SDK's published list (`colossus_sdk::reasons::ALL`) or one
    /// of this crate's own; anything else a worker sent is dropped.
    pub reason: Option<String>,
    /// Whether the same call may succeed later. Mutations that may have taken effect say
    /// `false`: the bridge never replays one and neither should the renderer.
    pub retryable: bool,
    /// How long to wait before retrying, in milliseconds, when the target said so.
    pub retry_after_ms: Option<u64>,
    /// The input field at fault, for [`ErrorKind::InvalidInput`].
    pub field: Option<&'static str>,
}

impl BridgeError {
    pub(crate) fn new(kind: ErrorKind, reason: &'static str) -> BridgeError {
        BridgeError {
            kind,
            reason: Some(reason.to_owned()),
            retryable: false,
            retry_after_ms: None,
            field: None,
        }
    }

    pub(crate) fn input(field: &'static str) -> BridgeError {
        BridgeError {
            field: Some(field),
            ..BridgeError::new(ErrorKind::InvalidInput, "invalid_input")
        }
    }

    pub(crate) fn retryable(mut self) -> BridgeError {
        self.retryable = true;
        self
    }

    /// Whether the failure says the target itself is unhealthy (rather than the request).
    pub(crate) fn is_target_fault(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Unavailable
                | ErrorKind::Trust
                | ErrorKind::Authentication
                | ErrorKind::Internal
                | ErrorKind::Closed
        )
    }
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.kind)?;
        if let Some(reason) = &self.reason {
            write!(f, " ({reason})")?;
        }
        if let Some(field) = self.field {
            write!(f, " at {field}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BridgeError {}

/// The renderer's kind for an SDK kind. Kinds newer than this crate read as `Internal`.
pub(crate) fn kind_of(kind: Kind) -> ErrorKind {
    match kind {
        Kind::Trust
        | Kind::Descriptor
        | Kind::Certificate
        | Kind::PinMismatch
        | Kind::TlsPolicy
        | Kind::IncompatibleServer => ErrorKind::Trust,
        Kind::Credential | Kind::Authentication => ErrorKind::Authentication,
        Kind::PermissionDenied => ErrorKind::PermissionDenied,
        Kind::NotFound => ErrorKind::NotFound,
        Kind::InvalidArgument | Kind::IdempotencyConflict => ErrorKind::InvalidArgument,
        Kind::FailedPrecondition => ErrorKind::FailedPrecondition,
        Kind::CapabilityMissing => ErrorKind::Unsupported,
        Kind::ResourceExhausted => ErrorKind::ResourceExhausted,
        Kind::Transport | Kind::Sidecar | Kind::WatchIdleTimeout => ErrorKind::Unavailable,
        Kind::DeadlineExceeded => ErrorKind::DeadlineExceeded,
        Kind::OutcomeUnknown => ErrorKind::OutcomeUnknown,
        Kind::ClientClosed => ErrorKind::Closed,
        Kind::Api
        | Kind::DataLoss
        | Kind::Internal
        | Kind::ProtocolViolation
        | Kind::WatchGap
        | Kind::ArtifactIntegrity => ErrorKind::Internal,
        _ => ErrorKind::Internal,
    }
}

impl From<Error> for BridgeError {
    fn from(error: Error) -> BridgeError {
        Self::from(&error)
    }
}

impl From<&Error> for BridgeError {
    fn from(error: &Error) -> BridgeError {
        // A reason crosses only when it is one the SDK publishes: a worker's ErrorInfo
        // reason is free text as far as the wire goes.
        let reason = error
            .reason()
            .and_then(|r| reasons::ALL.iter().find(|known| **known == r))
            .map(|r| (*r).to_owned());
        let kind = kind_of(error.kind());
        BridgeError {
            kind,
            reason,
            retryable: error.is_retryable() && kind != ErrorKind::OutcomeUnknown,
            retry_after_ms: error
                .retry_delay()
                .map(|d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            field: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_reason_outside_the_published_list_is_dropped() {
        let secret = "ab".repeat(32);
        let error = Error::local(Kind::InvalidArgument, &secret, "at /home/me/secret");
        let bridged = BridgeError::from(error);
        assert_eq!(bridged.reason, None);
        assert_eq!(bridged.kind, ErrorKind::InvalidArgument);
        let known = Error::local(Kind::NotFound, reasons::RUN_NOT_FOUND, "x");
        assert_eq!(
            BridgeError::from(known).reason.as_deref(),
            Some(reasons::RUN_NOT_FOUND)
        );
    }

    #[test]
    fn an_unknown_outcome_is_never_retryable() {
        let error = Error::local(Kind::OutcomeUnknown, reasons::RUN_NOT_FOUND, "x");
        assert!(!BridgeError::from(error).retryable);
    }
}
