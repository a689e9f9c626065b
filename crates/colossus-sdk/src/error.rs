//! The SDK's one error type: [`Error`], with a [`Kind`] taxonomy, a gRPC [`Code`], a reason
//! name (see [`reasons`](crate::reasons)) and metadata. Branch on [`Error::is`] or the
//! reason; never parse the message. Nothing in an `Error` ever holds a bearer.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// A node of the error taxonomy. [`Kind::parent`] links each kind to a broader one, so
/// `err.is(Kind::Trust)` holds for a pin mismatch, as in the other SDKs' hierarchies.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The worker could not be shown to be the provisioned one (C1-C4, C6).
    Trust,
    /// `endpoint.json` or a sidecar bootstrap endpoint broke its rules (C1).
    Descriptor,
    /// `certificate.pem` broke its rules (C2).
    Certificate,
    /// A certificate or instance ID differs from the provisioned identity.
    PinMismatch,
    /// A handshake was not TLS 1.3 with exactly one presented certificate.
    TlsPolicy,
    /// GetServerInfo named another instance, API package, major or deployment mode.
    IncompatibleServer,
    /// The credential provider failed or returned a malformed bearer.
    Credential,
    /// The worker refused the call with a definite status.
    Api,
    /// `UNAUTHENTICATED`: missing, unknown, inactive or revoked bearer.
    Authentication,
    /// A scope or role is not in the application's grant.
    PermissionDenied,
    /// The run, interaction or artifact is not visible to this application.
    NotFound,
    /// `INVALID_ARGUMENT`, or a request the SDK refused before sending.
    InvalidArgument,
    /// The idempotency key was used for a different request.
    IdempotencyConflict,
    /// The run or interaction is not in a state that allows this.
    FailedPrecondition,
    /// The worker does not advertise a capability the call needs (S4).
    CapabilityMissing,
    /// `RESOURCE_EXHAUSTED`, or a message over a size cap (C7).
    ResourceExhausted,
    /// The worker's journal failed its integrity check.
    DataLoss,
    /// `INTERNAL` or another server fault without a more specific meaning.
    Internal,
    /// No definite answer: connection lost, unavailable, cancelled.
    Transport,
    /// The per-call timeout expired.
    DeadlineExceeded,
    /// A watch received no event for longer than its idle timeout.
    WatchIdleTimeout,
    /// A mutation failed in a way that leaves its effect unknown; for a create, call again
    /// with the same idempotency key ([`Error::idempotency_key`]).
    OutcomeUnknown,
    /// The worker broke the contract.
    ProtocolViolation,
    /// A watch received a sequence beyond the last delivered one plus one.
    WatchGap,
    /// Downloaded bytes differ from the declared size or SHA-256.
    ArtifactIntegrity,
    /// The sidecar worker failed to start, broke the bootstrap or kept exiting.
    Sidecar,
    /// The client was used after it was closed.
    ClientClosed,
}

impl Kind {
    /// The broader kind this one belongs to; `None` for the roots.
    pub const fn parent(self) -> Option<Kind> {
        use Kind::*;
        match self {
            Descriptor | Certificate | PinMismatch | TlsPolicy | IncompatibleServer => Some(Trust),
            Authentication | PermissionDenied | NotFound | InvalidArgument
            | IdempotencyConflict | FailedPrecondition | ResourceExhausted | DataLoss
            | Internal => Some(Api),
            CapabilityMissing => Some(FailedPrecondition),
            DeadlineExceeded | WatchIdleTimeout => Some(Transport),
            WatchGap | ArtifactIntegrity => Some(ProtocolViolation),
            Trust | Credential | Api | Transport | OutcomeUnknown | ProtocolViolation | Sidecar
            | ClientClosed => None,
        }
    }

    /// Whether this kind is `other` or lies beneath it.
    pub fn is_a(self, other: Kind) -> bool {
        let mut k = Some(self);
        while let Some(c) = k {
            if c == other {
                return true;
            }
            k = c.parent();
        }
        false
    }

    /// A short description, used in [`Error`]'s `Display`.
    pub const fn describe(self) -> &'static str {
        use Kind::*;
        match self {
            Trust => "trust check failed",
            Descriptor => "descriptor rejected",
            Certificate => "certificate rejected",
            PinMismatch => "pin mismatch",
            TlsPolicy => "TLS policy violated",
            IncompatibleServer => "incompatible server",
            Credential => "credential rejected",
            Api => "request refused",
            Authentication => "authentication failed",
            PermissionDenied => "permission denied",
            NotFound => "not found",
            InvalidArgument => "invalid argument",
            IdempotencyConflict => "idempotency conflict",
            FailedPrecondition => "failed precondition",
            CapabilityMissing => "capability missing",
            ResourceExhausted => "resource exhausted",
            DataLoss => "data loss",
            Internal => "internal server error",
            Transport => "transport failure",
            DeadlineExceeded => "deadline exceeded",
            WatchIdleTimeout => "watch idle timeout",
            OutcomeUnknown => "outcome unknown",
            ProtocolViolation => "protocol violation",
            WatchGap => "watch gap",
            ArtifactIntegrity => "artifact integrity",
            Sidecar => "sidecar failure",
            ClientClosed => "client closed",
        }
    }
}

/// A gRPC status code, spelled as the other SDKs spell it (`NOT_FOUND`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// The call was cancelled.
    Cancelled,
    /// An unknown error.
    Unknown,
    /// The request is malformed.
    InvalidArgument,
    /// The deadline expired before the call completed.
    DeadlineExceeded,
    /// The resource does not exist for this caller.
    NotFound,
    /// The resource already exists.
    AlreadyExists,
    /// The caller lacks permission.
    PermissionDenied,
    /// A quota or limit is exhausted.
    ResourceExhausted,
    /// The system is not in a state that allows the call.
    FailedPrecondition,
    /// The call was aborted.
    Aborted,
    /// A value is out of range.
    OutOfRange,
    /// The method is not implemented.
    Unimplemented,
    /// An internal error.
    Internal,
    /// The service is unavailable.
    Unavailable,
    /// Data was lost or corrupted.
    DataLoss,
    /// The caller is not authenticated.
    Unauthenticated,
}

impl Code {
    /// The upper-case name (`NOT_FOUND`), as every SDK of the family prints it.
    pub const fn as_str(self) -> &'static str {
        use Code::*;
        match self {
            Cancelled => "CANCELLED",
            Unknown => "UNKNOWN",
            InvalidArgument => "INVALID_ARGUMENT",
            DeadlineExceeded => "DEADLINE_EXCEEDED",
            NotFound => "NOT_FOUND",
            AlreadyExists => "ALREADY_EXISTS",
            PermissionDenied => "PERMISSION_DENIED",
            ResourceExhausted => "RESOURCE_EXHAUSTED",
            FailedPrecondition => "FAILED_PRECONDITION",
            Aborted => "ABORTED",
            OutOfRange => "OUT_OF_RANGE",
            Unimplemented => "UNIMPLEMENTED",
            Internal => "INTERNAL",
            Unavailable => "UNAVAILABLE",
            DataLoss => "DATA_LOSS",
            Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The one error type of the SDK.
///
/// ```
/// use colossus_sdk::{Error, Kind, reasons};
///
/// let err = Error::local(Kind::PinMismatch, reasons::PIN_MISMATCH, "the leaf is not the pinned one");
/// assert!(err.is(Kind::Trust));
/// assert_eq!(err.reason(), Some(reasons::PIN_MISMATCH));
/// assert_eq!(err.code(), None); // refused locally: nothing was sent
/// ```
pub struct Error {
    // Boxed so a `Result<T>` stays one pointer wide on the error side.
    inner: Box<Inner>,
}

struct Inner {
    kind: Kind,
    code: Option<Code>,
    reason: Option<String>,
    message: String,
    metadata: BTreeMap<String, String>,
    idempotency_key: Option<String>,
    retry_delay: Option<Duration>,
    source: Option<Source>,
}

impl Error {
    /// An error the SDK raises on its own (no status from the worker).
    pub fn local(kind: Kind, reason: &str, message: impl Into<String>) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                code: None,
                reason: Some(reason.to_owned()),
                message: message.into(),
                metadata: BTreeMap::new(),
                idempotency_key: None,
                retry_delay: None,
                source: None,
            }),
        }
    }

    /// An error carrying a status from the worker (or the transport).
    pub fn status(
        kind: Kind,
        code: Code,
        reason: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        let mut err = Error::local(kind, "", message);
        err.inner.code = Some(code);
        err.inner.reason = reason;
        err
    }

    /// Adds one metadata entry (`field`, `limit`, `capability`...).
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.inner.metadata.insert(key.into(), value.into());
        self
    }

    /// Records the idempotency key of the create that failed.
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.inner.idempotency_key = Some(key.into());
        self
    }

    /// Records the worker's suggested delay before a retry (`google.rpc.RetryInfo`).
    #[must_use]
    pub fn with_retry_delay(mut self, delay: Duration) -> Self {
        self.inner.retry_delay = Some(delay);
        self
    }

    /// Attaches the underlying cause, readable through `source()`.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<Source>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// Returns the same error re-classified as `kind` (for example a transport failure of
    /// a mutation, which becomes [`Kind::OutcomeUnknown`]).
    #[must_use]
    pub fn with_kind(mut self, kind: Kind) -> Self {
        self.inner.kind = kind;
        self
    }

    /// The most specific kind of this error.
    pub fn kind(&self) -> Kind {
        self.inner.kind
    }

    /// Whether this error is of `kind` or of a kind beneath it.
    pub fn is(&self, kind: Kind) -> bool {
        self.inner.kind.is_a(kind)
    }

    /// The gRPC status code the worker answered with; `None` when the SDK refused locally.
    pub fn code(&self) -> Option<Code> {
        self.inner.code
    }

    /// The reason name (compare with [`reasons`](crate::reasons)); `None` when there is none.
    pub fn reason(&self) -> Option<&str> {
        self.inner.reason.as_deref().filter(|r| !r.is_empty())
    }

    /// The message, for people.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The `ErrorInfo` metadata (and the SDK's own, for local errors).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.inner.metadata
    }

    /// The idempotency key of the failed create, when the call was a create.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.inner.idempotency_key.as_deref()
    }

    /// The worker's suggested delay before retrying (a rate-limited create), if it sent one.
    pub fn retry_delay(&self) -> Option<Duration> {
        self.inner.retry_delay
    }

    /// Whether sending the same request again may succeed and repeats no effect: a read
    /// that failed with `UNAVAILABLE`, or a create refused under the worker's create rate
    /// limit (`CREATE_RATE_LIMIT`: nothing was created, so the same request with the same
    /// idempotency key is safe after [`retry_delay`](Self::retry_delay)). The SDK itself
    /// retries only the first, and never a mutation (S2).
    pub fn is_retryable(&self) -> bool {
        self.is_retryable_read()
            || (self.inner.code == Some(Code::ResourceExhausted)
                && self.reason() == Some(crate::reasons::CREATE_RATE_LIMIT))
    }

    /// The SDK's own rule for retrying reads and reconnecting watches: `UNAVAILABLE` only.
    pub(crate) fn is_retryable_read(&self) -> bool {
        self.inner.code == Some(Code::Unavailable) && self.is(Kind::Transport)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "colossus: {}", self.inner.kind.describe())?;
        if !self.inner.message.is_empty() {
            write!(f, ": {}", self.inner.message)?;
        }
        let mut parts = Vec::new();
        if let Some(code) = self.inner.code {
            parts.push(format!("code={code}"));
        }
        if let Some(reason) = self.reason() {
            parts.push(format!("reason={reason}"));
        }
        if !self.inner.metadata.is_empty() {
            let kv: Vec<String> = self
                .inner
                .metadata
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            parts.push(format!("metadata={}", kv.join(",")));
        }
        if let Some(key) = &self.inner.idempotency_key {
            parts.push(format!("idempotency_key={key}"));
        }
        if !parts.is_empty() {
            write!(f, " ({})", parts.join("; "))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("code", &self.inner.code)
            .field("reason", &self.reason())
            .field("message", &self.inner.message)
            .field("metadata", &self.inner.metadata)
            .field("idempotency_key", &self.inner.idempotency_key)
            .field("retry_delay", &self.inner.retry_delay)
            .field("source", &self.inner.source)
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// The SDK's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests;
