use super::*;

fn status_with(code: tonic::Code, details: Vec<prost_types::Any>) -> tonic::Status {
    let raw = RpcStatus {
        code: code as i32,
        message: "refused".into(),
        details,
    }
    .encode_to_vec();
    tonic::Status::with_details(code, "refused", raw.into())
}

fn error_info(reason: &str, domain: &str) -> prost_types::Any {
    prost_types::Any {
        type_url: ERROR_INFO_TYPE.into(),
        value: ErrorInfo {
            reason: reason.into(),
            domain: domain.into(),
            metadata: [("limit".to_owned(), "5".to_owned())].into(),
        }
        .encode_to_vec(),
    }
}

#[test]
fn reason_metadata_and_retry_delay_come_from_the_details() {
    let retry = prost_types::Any {
        type_url: RETRY_INFO_TYPE.into(),
        value: RetryInfo {
            retry_delay: Some(prost_types::Duration {
                seconds: 1,
                nanos: 500_000_000,
            }),
        }
        .encode_to_vec(),
    };
    let s = status_with(
        tonic::Code::ResourceExhausted,
        vec![
            error_info("ERROR_REASON_CREATE_RATE_LIMIT", ERROR_DOMAIN),
            retry,
        ],
    );
    let err = map(&s, CallKind::Mutation, Some("k1"));
    assert!(err.is(Kind::ResourceExhausted));
    assert_eq!(err.code(), Some(Code::ResourceExhausted));
    assert_eq!(err.reason(), Some(reasons::CREATE_RATE_LIMIT));
    assert_eq!(err.metadata()["limit"], "5");
    assert_eq!(err.retry_delay(), Some(Duration::from_millis(1500)));
    assert_eq!(err.idempotency_key(), Some("k1"));
}

#[test]
fn another_domains_error_info_is_ignored() {
    let s = status_with(
        tonic::Code::NotFound,
        vec![error_info("RUN_NOT_FOUND", "example.com")],
    );
    let err = map(&s, CallKind::Read, None);
    assert!(err.is(Kind::NotFound));
    assert_eq!(err.reason(), None);
}

#[test]
fn reasons_refine_the_kind() {
    let s = status_with(
        tonic::Code::FailedPrecondition,
        vec![error_info("CAPABILITY_NOT_SUPPORTED", ERROR_DOMAIN)],
    );
    assert!(map(&s, CallKind::Read, None).is(Kind::CapabilityMissing));
    let s = status_with(
        tonic::Code::AlreadyExists,
        vec![error_info("IDEMPOTENCY_CONFLICT", ERROR_DOMAIN)],
    );
    assert!(map(&s, CallKind::Mutation, None).is(Kind::IdempotencyConflict));
}

#[test]
fn ambiguous_mutation_failures_are_outcome_unknown_and_reads_stay_retryable() {
    let s = tonic::Status::unavailable("connection reset");
    let read = map(&s, CallKind::Read, None);
    assert!(read.is(Kind::Transport) && read.is_retryable());
    let write = map(&s, CallKind::Mutation, Some("k"));
    assert!(write.is(Kind::OutcomeUnknown) && !write.is_retryable());
    assert_eq!(write.idempotency_key(), Some("k"));
    let definite = map(
        &tonic::Status::invalid_argument("bad"),
        CallKind::Mutation,
        None,
    );
    assert!(definite.is(Kind::InvalidArgument));
}

#[test]
fn a_trust_refusal_in_the_chain_is_reported_as_such() {
    let refusal = Error::local(
        Kind::PinMismatch,
        reasons::PIN_MISMATCH,
        "another certificate",
    );
    let s = tonic::Status::from_error(Box::new(refusal));
    let err = map(&s, CallKind::Mutation, Some("k"));
    assert!(err.is(Kind::PinMismatch), "{err}");
    assert_eq!(err.reason(), Some(reasons::PIN_MISMATCH));
    assert_eq!(err.idempotency_key(), Some("k"));
}

/// A real hyper "operation was canceled": a request sent on a connection whose task has
/// ended, as when the worker restarts between a watch's reconnect and its first frame.
async fn canceled_by_a_closed_connection() -> tonic::Status {
    let (client_io, server_io) = tokio::io::duplex(1024);
    let (mut send, conn) = hyper::client::conn::http2::handshake::<_, _, String>(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(client_io),
    )
    .await
    .expect("the handshake is written to the buffer");
    drop(server_io);
    let _ = conn.await;
    let err = send
        .send_request(http::Request::new(String::new()))
        .await
        .expect_err("the connection is gone");
    assert!(err.is_canceled(), "{err:?}");
    tonic::Status::from_error(Box::new(err))
}

#[tokio::test]
async fn a_request_canceled_by_a_closed_connection_is_unavailable() {
    let s = canceled_by_a_closed_connection().await;
    assert_eq!(s.code(), tonic::Code::Cancelled, "tonic's own mapping");
    let read = map(&s, CallKind::Read, None);
    assert!(read.is(Kind::Transport) && read.is_retryable(), "{read}");
    assert_eq!(read.code(), Some(Code::Unavailable));
    let write = map(&s, CallKind::Mutation, Some("k"));
    assert!(write.is(Kind::OutcomeUnknown), "{write}");
}

#[test]
fn a_cancelled_status_from_the_worker_keeps_its_code() {
    let err = map(&tonic::Status::cancelled("stopped"), CallKind::Read, None);
    assert_eq!(err.code(), Some(Code::Cancelled));
    assert!(!err.is_retryable());
}

#[test]
fn garbage_details_are_ignored() {
    let s = tonic::Status::with_details(tonic::Code::Internal, "x", vec![0xff, 0xff].into());
    let err = map(&s, CallKind::Read, None);
    assert!(err.is(Kind::Internal));
    assert_eq!(err.reason(), None);
}
