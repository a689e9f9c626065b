//! Maps a failed gRPC call (`tonic::Status`) to an [`Error`]: the code, the contract's
//! `google.rpc.ErrorInfo` (reason and metadata) and `google.rpc.RetryInfo` (retry delay),
//! decoded from `grpc-status-details-bin`. The only place that does.

use std::collections::HashMap;
use std::time::Duration;

use prost::Message;

use crate::{Code, Error, Kind, reasons};

/// The `ErrorInfo` domain of the contract; other domains are ignored.
const ERROR_DOMAIN: &str = "colossus.api.v1alpha1";
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// `google.rpc.Status`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub(crate) code: i32,
    #[prost(string, tag = "2")]
    pub(crate) message: String,
    #[prost(message, repeated, tag = "3")]
    pub(crate) details: Vec<prost_types::Any>,
}

/// `google.rpc.ErrorInfo`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ErrorInfo {
    #[prost(string, tag = "1")]
    pub(crate) reason: String,
    #[prost(string, tag = "2")]
    pub(crate) domain: String,
    #[prost(map = "string, string", tag = "3")]
    pub(crate) metadata: HashMap<String, String>,
}

/// `google.rpc.RetryInfo`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    pub(crate) retry_delay: Option<prost_types::Duration>,
}

/// Whether an ambiguous failure leaves the call's effect unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    Read,
    Mutation,
}

pub(crate) fn code(c: tonic::Code) -> Code {
    use tonic::Code as T;
    match c {
        T::Cancelled => Code::Cancelled,
        T::InvalidArgument => Code::InvalidArgument,
        T::DeadlineExceeded => Code::DeadlineExceeded,
        T::NotFound => Code::NotFound,
        T::AlreadyExists => Code::AlreadyExists,
        T::PermissionDenied => Code::PermissionDenied,
        T::ResourceExhausted => Code::ResourceExhausted,
        T::FailedPrecondition => Code::FailedPrecondition,
        T::Aborted => Code::Aborted,
        T::OutOfRange => Code::OutOfRange,
        T::Unimplemented => Code::Unimplemented,
        T::Internal => Code::Internal,
        T::Unavailable => Code::Unavailable,
        T::DataLoss => Code::DataLoss,
        T::Unauthenticated => Code::Unauthenticated,
        T::Ok | T::Unknown => Code::Unknown,
    }
}

fn kind_of(code: Code, reason: Option<&str>) -> Kind {
    match reason {
        Some(reasons::IDEMPOTENCY_CONFLICT) => return Kind::IdempotencyConflict,
        Some(reasons::CAPABILITY_NOT_SUPPORTED) => return Kind::CapabilityMissing,
        _ => {}
    }
    match code {
        Code::Unauthenticated => Kind::Authentication,
        Code::PermissionDenied => Kind::PermissionDenied,
        Code::NotFound => Kind::NotFound,
        Code::InvalidArgument | Code::OutOfRange => Kind::InvalidArgument,
        Code::FailedPrecondition => Kind::FailedPrecondition,
        Code::ResourceExhausted => Kind::ResourceExhausted,
        Code::DataLoss => Kind::DataLoss,
        Code::Internal => Kind::Internal,
        Code::Unavailable | Code::Cancelled | Code::Unknown => Kind::Transport,
        Code::DeadlineExceeded => Kind::DeadlineExceeded,
        Code::AlreadyExists | Code::Unimplemented | Code::Aborted => Kind::Api,
    }
}

fn ambiguous_for_mutations(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::Unknown
            | Code::Internal
            | Code::Aborted
    )
}

/// Whether the connection was refused: nothing reached the worker (it is restarting).
fn connection_refused(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    false
}

struct Details {
    reason: Option<String>,
    metadata: HashMap<String, String>,
    retry_delay: Option<Duration>,
}

fn details(raw: &[u8]) -> Details {
    let mut out = Details {
        reason: None,
        metadata: HashMap::new(),
        retry_delay: None,
    };
    let Ok(status) = RpcStatus::decode(raw) else {
        return out;
    };
    for any in &status.details {
        match any.type_url.as_str() {
            ERROR_INFO_TYPE if out.reason.is_none() => {
                if let Ok(info) = ErrorInfo::decode(any.value.as_slice())
                    && info.domain == ERROR_DOMAIN
                {
                    let reason = info
                        .reason
                        .strip_prefix("ERROR_REASON_")
                        .unwrap_or(&info.reason);
                    out.reason = Some(reason.to_owned());
                    out.metadata = info.metadata;
                }
            }
            RETRY_INFO_TYPE => {
                if let Ok(info) = RetryInfo::decode(any.value.as_slice()) {
                    out.retry_delay = info
                        .retry_delay
                        .filter(|d| d.seconds >= 0 && d.nanos >= 0)
                        .map(|d| Duration::new(d.seconds as u64, d.nanos as u32));
                }
            }
            _ => {}
        }
    }
    out
}

/// A trust refusal recorded by the pinned connector when the channel reconnected (into
/// another listener, say), found in the status's source chain: nothing was sent, and it
/// is never reported as a plain transport failure.
fn trust_refusal(status: &tonic::Status) -> Option<Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(cur) = next {
        if let Some(found) = cur.downcast_ref::<Error>() {
            return found.is(Kind::Trust).then(|| {
                Error::local(found.kind(), found.reason().unwrap_or(""), found.message())
            });
        }
        next = cur.source();
    }
    None
}

/// Whether the call failed because its connection broke (the worker died or was cut
/// mid-call). tonic reports that as UNKNOWN ("transport error"), or as CANCELLED when hyper
/// dropped a request queued on a connection that closed ("operation was canceled"); every
/// SDK reports it as UNAVAILABLE (S9), which also makes a read retryable and a mutation
/// outcome-unknown. A CANCELLED the worker sent has no such source and keeps its code.
fn connection_lost(status: &tonic::Status) -> bool {
    use std::io::ErrorKind as K;
    let mut next: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(cur) = next {
        let hyper_closed = cur
            .downcast_ref::<hyper::Error>()
            .is_some_and(|h| h.is_incomplete_message() || h.is_closed() || h.is_canceled());
        let h2_broken = cur
            .downcast_ref::<h2::Error>()
            .is_some_and(|e| e.is_io() || e.is_go_away());
        let io_broken = cur.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
            )
        });
        if hyper_closed || h2_broken || io_broken {
            return true;
        }
        next = cur.source();
    }
    false
}

/// The error a refusal with `code`, `reason` and `retry_delay` maps to when no wire
/// carried it (an in-process backend's injected fault), classified as [`map`] would
/// classify the same status on a call of kind `call`.
#[cfg(feature = "embedded")]
pub(crate) fn from_parts(
    code: Code,
    reason: Option<&str>,
    message: &str,
    retry_delay: Option<Duration>,
    call: CallKind,
) -> Error {
    // The same rule as `map`'s, for a status that never crossed a connection.
    let unknown = call == CallKind::Mutation && ambiguous_for_mutations(code);
    let (kind, message) = if unknown {
        (
            Kind::OutcomeUnknown,
            format!("the outcome of the call is unknown: {message}"),
        )
    } else {
        (kind_of(code, reason), message.to_owned())
    };
    let mut err = Error::status(kind, code, reason.map(str::to_owned), message);
    if let Some(delay) = retry_delay {
        err = err.with_retry_delay(delay);
    }
    err
}

/// tonic's refusal of an inbound message over the accepted cap, as the local
/// `RESPONSE_TOO_LARGE`, with the cap from tonic's text ("..., the limit is: N bytes") as
/// `metadata.limit`, as the other SDKs report it.
fn response_too_large(tonic_text: &str) -> Error {
    let limit = tonic_text
        .split_once("the limit is: ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    match limit {
        Some(n) => Error::local(
            Kind::ResourceExhausted,
            reasons::RESPONSE_TOO_LARGE,
            format!("a response is larger than the accepted response cap of {n} bytes"),
        )
        .with_metadata("limit", n),
        None => Error::local(
            Kind::ResourceExhausted,
            reasons::RESPONSE_TOO_LARGE,
            "a response is larger than the accepted response cap",
        ),
    }
}

/// Maps one failed call; `idempotency_key` is the create's key (also set on the error).
pub(crate) fn map(status: &tonic::Status, call: CallKind, idempotency_key: Option<&str>) -> Error {
    if let Some(refusal) = trust_refusal(status) {
        return match idempotency_key {
            Some(key) => refusal.with_idempotency_key(key),
            None => refusal,
        };
    }
    let code = match status.code() {
        tonic::Code::Unknown | tonic::Code::Cancelled if connection_lost(status) => {
            Code::Unavailable
        }
        c => code(c),
    };
    if (code == Code::OutOfRange || code == Code::ResourceExhausted)
        && status.message().contains("message length too large")
    {
        return response_too_large(status.message());
    }
    let refused = code == Code::Unavailable && connection_refused(status);
    let d = details(status.details());
    let reason = d
        .reason
        .or_else(|| refused.then(|| reasons::UNREACHABLE.to_owned()));
    let mut kind = kind_of(code, reason.as_deref());
    let mut message = if status.message().is_empty() {
        code.as_str().to_ascii_lowercase()
    } else {
        status.message().to_owned()
    };
    if call == CallKind::Mutation && ambiguous_for_mutations(code) && !refused {
        kind = Kind::OutcomeUnknown;
        message = format!("the outcome of the call is unknown: {message}");
    }
    let mut err = Error::status(kind, code, reason, message);
    let mut metadata: Vec<_> = d.metadata.into_iter().collect();
    metadata.sort();
    for (k, v) in metadata {
        err = err.with_metadata(k, v);
    }
    if let Some(delay) = d.retry_delay {
        err = err.with_retry_delay(delay);
    }
    if let Some(key) = idempotency_key {
        err = err.with_idempotency_key(key);
    }
    err
}

#[cfg(test)]
mod tests;
