//! Encoders of `google.rpc` details for tests that build a refusal by hand.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<prost_types::Any>,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorInfo {
    #[prost(string, tag = "1")]
    reason: String,
    #[prost(string, tag = "2")]
    domain: String,
}

#[derive(Clone, PartialEq, Message)]
struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    retry_delay: Option<prost_types::Duration>,
}

pub(crate) fn error_info(reason: &str) -> Vec<u8> {
    ErrorInfo {
        reason: format!("ERROR_REASON_{reason}"),
        domain: "colossus.api.v1alpha1".into(),
    }
    .encode_to_vec()
}

pub(crate) fn retry_info(millis: i32) -> Vec<u8> {
    RetryInfo {
        retry_delay: Some(prost_types::Duration {
            seconds: 0,
            nanos: millis * 1_000_000,
        }),
    }
    .encode_to_vec()
}

pub(crate) fn status(code: i32, message: &str, details: Vec<prost_types::Any>) -> Vec<u8> {
    RpcStatus {
        code,
        message: message.into(),
        details,
    }
    .encode_to_vec()
}
