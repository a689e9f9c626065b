//! The gRPC backend and the client against the shared fake worker, served in plain HTTP/2
//! on loopback (the trust layer is tested on its own), its answers scripted by each test.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tonic::Status;
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::transport::{Channel, Endpoint};

use super::{GrpcSession, SessionSource};
use crate::backend::BoxFuture;
use crate::model::{self, CreateRunRequest, RunStatus, ServerInfo, capabilities};
use crate::options::ClientOptions;
use crate::proto as p;
use crate::testing::client::fast_retries;
use crate::testing::fake_worker::{Answer, FakeWorker, Listener, Script};
use crate::{Client, Kind, Result, reasons};

struct Session {
    channel: Channel,
    info: ServerInfo,
    max_response_bytes: usize,
}

impl GrpcSession for Session {
    fn channel(&self) -> Channel {
        self.channel.clone()
    }
    fn server_info(&self) -> &ServerInfo {
        &self.info
    }
    fn authorize(&self, metadata: &mut MetadataMap) -> Result<()> {
        let mut value = MetadataValue::from_static("Bearer test-bearer");
        value.set_sensitive(true);
        metadata.insert("authorization", value);
        Ok(())
    }
    fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }
}

struct Fixed(Arc<dyn GrpcSession>);

impl SessionSource for Fixed {
    fn current(&self) -> BoxFuture<'_, Result<Arc<dyn GrpcSession>>> {
        let s = self.0.clone();
        Box::pin(async move { Ok(s) })
    }
    fn close(&self) {}
}

async fn start(script: Script, info: ServerInfo, options: ClientOptions) -> (Client, Listener) {
    start_capped(script, info, options, 4 << 20).await
}

/// [`start`] with the inbound message cap the session holds responses to (C7).
async fn start_capped(
    script: Script,
    info: ServerInfo,
    options: ClientOptions,
    max_response_bytes: usize,
) -> (Client, Listener) {
    let fake = FakeWorker::new(script).serve_plain().await;
    let channel = Endpoint::from_shared(format!("http://{}", fake.addr))
        .unwrap()
        .connect_lazy();
    let session: Arc<dyn GrpcSession> = Arc::new(Session {
        channel,
        info,
        max_response_bytes,
    });
    (Client::over_grpc(Fixed(session), options), fake)
}

fn ev(seq: u64, text: &str) -> Answer<p::RunEvent> {
    Ok(p::RunEvent {
        run_id: "r1".into(),
        sequence: seq,
        event_time: None,
        payload: Some(p::run_event::Payload::OutputDelta(p::OutputDelta {
            text: text.into(),
        })),
    })
}

fn end(seq: u64) -> Answer<p::RunEvent> {
    Ok(p::RunEvent {
        run_id: "r1".into(),
        sequence: seq,
        event_time: None,
        payload: Some(p::run_event::Payload::Terminated(p::RunTerminated {
            status: p::RunStatus::Succeeded as i32,
            result: None,
        })),
    })
}

fn run(status: p::RunStatus, last: u64) -> p::Run {
    p::Run {
        run_id: "r1".into(),
        status: status as i32,
        last_sequence: last,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_watch_resumes_after_unavailable_and_drops_the_replayed_events() {
    let script = Script {
        watches: vec![
            vec![
                ev(1, "a"),
                ev(2, "b"),
                Err(Status::unavailable("restarting")),
            ],
            vec![ev(1, "a"), ev(2, "b"), ev(3, "c"), end(4)],
        ]
        .into(),
        gets: vec![Ok(run(p::RunStatus::Succeeded, 4))].into(),
        ..Script::default()
    };
    let (client, fake) = start(script, ServerInfo::default(), fast_retries(4)).await;
    let mut watch = client.runs().watch("r1");
    let mut seen = Vec::new();
    while let Some(e) = watch.next().await {
        seen.push(e.unwrap().sequence);
    }
    assert_eq!(seen, [1, 2, 3, 4]);
    assert!(watch.is_complete());
    assert_eq!(fake.asked("WatchRun"), ["0", "2"]);
    let auths: Vec<_> = fake.requests().into_iter().map(|r| r.1).collect();
    assert!(
        auths
            .iter()
            .all(|a| a.as_deref() == Some("Bearer test-bearer")),
        "{auths:?}"
    );
}

#[tokio::test]
async fn an_altered_replay_on_the_wire_fails_the_watch() {
    let script = Script {
        watches: vec![
            vec![ev(1, "a"), Err(Status::unavailable("restarting"))],
            vec![ev(1, "A")],
        ]
        .into(),
        ..Script::default()
    };
    let (client, _fake) = start(script, ServerInfo::default(), fast_retries(4)).await;
    let items: Vec<_> = client.runs().watch("r1").collect().await;
    assert_eq!(items.len(), 2);
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.reason(), Some(reasons::WATCH_REPLAY_ALTERED));
}

#[tokio::test]
async fn a_gap_and_a_clean_close_short_of_the_end_fail() {
    let script = Script {
        watches: vec![vec![ev(1, "a"), ev(3, "c")]].into(),
        ..Script::default()
    };
    let (client, _fake) = start(script, ServerInfo::default(), fast_retries(4)).await;
    let items: Vec<_> = client.runs().watch("r1").collect().await;
    assert!(items[1].as_ref().unwrap_err().is(Kind::WatchGap));

    let script = Script {
        watches: vec![vec![ev(1, "a")]].into(),
        gets: vec![Ok(run(p::RunStatus::Succeeded, 2))].into(),
        ..Script::default()
    };
    let (client, _fake) = start(script, ServerInfo::default(), fast_retries(4)).await;
    let items: Vec<_> = client.runs().watch("r1").collect().await;
    assert_eq!(
        items[1].as_ref().unwrap_err().reason(),
        Some(reasons::WATCH_RECONCILE_MISMATCH)
    );
}

#[tokio::test]
async fn reads_retry_unavailable_but_a_create_is_sent_once() {
    let script = Script {
        gets: vec![
            Err(Status::unavailable("a")),
            Err(Status::unavailable("b")),
            Ok(run(p::RunStatus::Running, 0)),
        ]
        .into(),
        creates: vec![Err(Status::unavailable("cut"))].into(),
        ..Script::default()
    };
    let (client, fake) = start(script, ServerInfo::default(), fast_retries(4)).await;
    let got = client.runs().get("r1").await.unwrap();
    assert_eq!(got.status, RunStatus::Running);
    assert_eq!(fake.asked("GetRun").len(), 3);

    let request = CreateRunRequest::text("hi");
    let err = client.runs().create(request.clone()).await.unwrap_err();
    assert!(err.is(Kind::OutcomeUnknown), "{err}");
    assert_eq!(err.idempotency_key(), Some(request.idempotency_key()));
    assert_eq!(
        fake.asked("CreateRun"),
        [request.idempotency_key()],
        "never retried"
    );
}

fn rate_limited(delay_ms: i32) -> Status {
    let info = prost_types::Any {
        type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
        value: crate::testing::rpc_status::error_info("CREATE_RATE_LIMIT"),
    };
    let retry = prost_types::Any {
        type_url: "type.googleapis.com/google.rpc.RetryInfo".into(),
        value: crate::testing::rpc_status::retry_info(delay_ms),
    };
    let details = crate::testing::rpc_status::status(8, "slow down", vec![info, retry]);
    Status::with_details(tonic::Code::ResourceExhausted, "slow down", details.into())
}

#[tokio::test]
async fn a_rate_limited_create_is_sent_again_with_the_same_key_only_when_asked() {
    let created = p::CreateRunResponse {
        run: Some(run(p::RunStatus::Queued, 0)),
        replayed: false,
    };
    let script = Script {
        creates: vec![Err(rate_limited(30)), Ok(created.clone())].into(),
        ..Script::default()
    };
    let options = ClientOptions::builder()
        .rate_limit_retries(1)
        .build()
        .unwrap();
    let (client, fake) = start(script, ServerInfo::default(), options).await;
    let request = CreateRunRequest::text("hi");
    let started = std::time::Instant::now();
    let result = client.runs().create(request.clone()).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(30),
        "the worker's retry_delay is honoured"
    );
    assert_eq!(result.idempotency_key, request.idempotency_key());
    let key = request.idempotency_key().to_owned();
    assert_eq!(fake.asked("CreateRun"), [key.clone(), key]);

    let script = Script {
        creates: vec![Err(rate_limited(30))].into(),
        ..Script::default()
    };
    let (client, fake) = start(script, ServerInfo::default(), fast_retries(4)).await;
    let err = client
        .runs()
        .create(CreateRunRequest::text("hi"))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::CREATE_RATE_LIMIT));
    assert_eq!(err.retry_delay(), Some(Duration::from_millis(30)));
    assert_eq!(fake.asked("CreateRun").len(), 1);
}

#[tokio::test]
async fn capability_gates_send_nothing() {
    let (client, fake) = start(Script::default(), ServerInfo::default(), fast_retries(4)).await;
    let request = CreateRunRequest::builder()
        .text("go")
        .plan_action(model::PlanAction::new(
            "r0",
            1,
            model::PlanActionKind::Revise,
        ))
        .build();
    let err = client.runs().create(request).await.unwrap_err();
    assert!(err.is(Kind::CapabilityMissing));
    assert_eq!(err.metadata()["capability"], capabilities::PLANS_CONTINUE);
    let image = CreateRunRequest::builder()
        .part(model::InputPart::artifact_with_type("a1", "image/png"))
        .build();
    assert!(
        client
            .runs()
            .create(image)
            .await
            .unwrap_err()
            .is(Kind::CapabilityMissing)
    );
    assert!(
        client
            .artifacts()
            .download("a1")
            .await
            .unwrap_err()
            .is(Kind::CapabilityMissing)
    );
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_request_over_the_advertised_cap_is_refused_locally() {
    let mut info = ServerInfo::default();
    info.limits.max_request_bytes = 64;
    info.capabilities.push(capabilities::ARTIFACTS.to_owned());
    let (client, fake) = start(Script::default(), info, fast_retries(4)).await;
    let err = client
        .runs()
        .create(CreateRunRequest::text("x".repeat(100)))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::REQUEST_TOO_LARGE));
    assert!(fake.asked("CreateRun").is_empty());
    // An upload's manifest alone (a 64-digit SHA-256) is over 64 bytes: nothing is sent.
    let err = client
        .artifacts()
        .upload(b"x", "text/plain")
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::REQUEST_TOO_LARGE));
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_response_over_the_accepted_cap_is_a_local_response_too_large() {
    let mut big = run(p::RunStatus::Running, 0);
    big.idempotency_key = "k".repeat(2048);
    let script = Script {
        gets: vec![Ok(big)].into(),
        ..Script::default()
    };
    let (client, fake) = start_capped(script, ServerInfo::default(), fast_retries(4), 1024).await;
    let err = client.runs().get("r1").await.unwrap_err();
    assert!(err.is(Kind::ResourceExhausted), "{err}");
    assert_eq!(err.reason(), Some(reasons::RESPONSE_TOO_LARGE));
    assert_eq!(err.code(), None, "a local refusal carries no status code");
    assert_eq!(
        err.message(),
        "a response is larger than the accepted response cap of 1024 bytes"
    );
    assert_eq!(
        err.metadata().get("limit").map(String::as_str),
        Some("1024"),
        "the cap, as the other SDKs report it"
    );
    assert_eq!(fake.asked("GetRun").len(), 1, "never retried");
}

#[tokio::test]
async fn a_create_and_a_watch_reconnect_are_logged_without_the_bearer() {
    let (logs, _guard) = crate::testing::log_capture::capture();
    let script = Script {
        creates: vec![Ok(p::CreateRunResponse {
            run: Some(run(p::RunStatus::Running, 0)),
            replayed: false,
        })]
        .into(),
        watches: vec![
            vec![ev(1, "a"), Err(Status::unavailable("restarting"))],
            vec![end(2)],
        ]
        .into(),
        gets: vec![Ok(run(p::RunStatus::Succeeded, 2))].into(),
        ..Script::default()
    };
    let (client, _fake) = start(script, ServerInfo::default(), fast_retries(4)).await;
    let created = client
        .runs()
        .create(CreateRunRequest::text("hi"))
        .await
        .unwrap();
    let mut watch = client.runs().watch(&created.run.run_id);
    while let Some(e) = watch.next().await {
        e.unwrap();
    }
    let text = logs.text();
    assert!(text.contains("run created"), "{text}");
    assert!(text.contains(created.idempotency_key.as_str()), "{text}");
    assert!(text.contains("watch reconnecting"), "{text}");
    assert!(
        !text.contains("test-bearer"),
        "the bearer was logged:\n{text}"
    );
}
