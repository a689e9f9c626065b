//! Encoders of `google.rpc` details for tests that build a refusal by hand, over the same
//! message definitions the status mapping decodes.

use std::collections::HashMap;

use prost::Message;

use crate::status::{ErrorInfo, RetryInfo, RpcStatus};

pub(crate) fn error_info(reason: &str) -> Vec<u8> {
    ErrorInfo {
        reason: format!("ERROR_REASON_{reason}"),
        domain: "colossus.api.v1alpha1".into(),
        metadata: HashMap::new(),
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
