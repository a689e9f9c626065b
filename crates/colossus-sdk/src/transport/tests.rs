//! The transport against in-process TLS listeners: a genuine worker, and the hostile ones
//! the pin policy must refuse (TLS 1.2 only, a foreign leaf, a leaf with a chain), first
//! on connect and then after a restart on the same port, where tonic's reconnect goes
//! through the connector again. Each refusal must be typed, and no listener may ever
//! see a request (so no bearer leaves the process) nor the provider be asked (C5).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::Request;

use super::{Session, Target, open_session};
use crate::grpc::GrpcSession;
use crate::model::DeploymentMode;
use crate::options::ClientOptions;
use crate::proto as p;
use crate::testing::credentials::{BEARER, Counting};
use crate::testing::fake_worker::{Behaviour, INSTANCE, listen};
use crate::testing::tls::{Leaf, leaf};
use crate::trust::pin::Pin;
use crate::{Kind, Result, reasons};

fn target(addr: SocketAddr, leaf: &Leaf) -> Target {
    Target {
        addr,
        pin: Pin::of_der(&leaf.der),
        instance_id: INSTANCE.into(),
        api_major: 1,
        mode: DeploymentMode::SharedDaemon,
    }
}

fn options() -> ClientOptions {
    ClientOptions::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// One GetRun on the session's channel, as the gRPC backend would send it, with the
/// error named as the backend's mapping names it.
async fn get_run(session: &Session) -> Result<()> {
    let mut req = Request::new(p::GetRunRequest {
        run_id: "r1".into(),
    });
    session.authorize(req.metadata_mut())?;
    req.set_timeout(Duration::from_secs(5));
    p::run_service_client::RunServiceClient::new(session.channel())
        .get_run(req)
        .await
        .map(drop)
        .map_err(|s| crate::status::map(&s, crate::status::CallKind::Read, None))
}

fn expected(behaviour: Behaviour) -> (Kind, &'static str) {
    match behaviour {
        Behaviour::Tls12Only => (Kind::TlsPolicy, reasons::TLS_VERSION),
        Behaviour::ForeignLeaf => (Kind::PinMismatch, reasons::PIN_MISMATCH),
        Behaviour::Chain => (Kind::TlsPolicy, reasons::TLS_CHAIN),
        Behaviour::Genuine => unreachable!(),
    }
}

const HOSTILE: [Behaviour; 3] = [
    Behaviour::Tls12Only,
    Behaviour::ForeignLeaf,
    Behaviour::Chain,
];

#[tokio::test]
async fn a_genuine_worker_is_proven_and_sent_the_bearer_once_trusted() {
    let genuine = leaf();
    let worker = listen(any_port(), &genuine, Behaviour::Genuine).await;
    let provider = Counting::default();
    let session = open_session(&target(worker.addr, &genuine), &provider, &options())
        .await
        .unwrap();
    assert_eq!(session.server_info().instance_id, INSTANCE);
    assert_eq!(provider.0.load(Ordering::SeqCst), 1);
    get_run(&session).await.unwrap();
    let seen = worker.requests();
    assert_eq!(
        seen[0].0, "GetServerInfo",
        "GetServerInfo is the first call (C6)"
    );
    assert!(
        seen.iter()
            .all(|(_, auth)| auth.as_deref() == Some(&*format!("Bearer {BEARER}")))
    );
    assert!(!format!("{session:?}").contains(BEARER));
}

#[tokio::test]
async fn hostile_listeners_are_refused_on_connect_with_a_typed_error_and_no_bearer() {
    let genuine = leaf();
    for behaviour in HOSTILE {
        let hostile = listen(any_port(), &genuine, behaviour).await;
        let provider = Counting::default();
        let err = open_session(&target(hostile.addr, &genuine), &provider, &options())
            .await
            .unwrap_err();
        let (kind, reason) = expected(behaviour);
        assert_eq!(
            (err.kind(), err.reason()),
            (kind, Some(reason)),
            "{behaviour:?}: {err}"
        );
        assert!(err.is(Kind::Trust));
        assert_eq!(
            provider.0.load(Ordering::SeqCst),
            0,
            "{behaviour:?}: the provider was asked"
        );
        assert!(hostile.requests().is_empty(), "{behaviour:?} saw a request");
    }
}

#[tokio::test]
async fn a_restart_into_a_hostile_listener_on_the_same_port_is_refused_on_reconnect() {
    let genuine = leaf();
    for behaviour in HOSTILE {
        let worker = listen(any_port(), &genuine, Behaviour::Genuine).await;
        let addr = worker.addr;
        let provider = Counting::default();
        let session = open_session(&target(addr, &genuine), &provider, &options())
            .await
            .unwrap();
        get_run(&session).await.unwrap();
        // The worker dies; something else takes its port.
        drop(worker);
        let hostile = listen(addr, &genuine, behaviour).await;
        let mut last = None;
        // The first call may still meet the dying connection; the reconnect must refuse.
        for _ in 0..20 {
            match get_run(&session).await {
                Err(e) if e.is(Kind::Trust) => {
                    last = Some(e);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                Ok(()) => panic!("{behaviour:?}: a call succeeded on the hostile listener"),
            }
        }
        let err = last.unwrap_or_else(|| panic!("{behaviour:?}: no trust refusal"));
        let (kind, reason) = expected(behaviour);
        assert_eq!(
            (err.kind(), err.reason()),
            (kind, Some(reason)),
            "{behaviour:?}: {err}"
        );
        assert!(
            hostile.requests().is_empty(),
            "{behaviour:?}: the bearer reached it"
        );
        assert_eq!(provider.0.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn a_wrong_server_info_is_refused_before_the_session_is_used() {
    let genuine = leaf();
    let worker = listen(any_port(), &genuine, Behaviour::Genuine).await;
    let mut t = target(worker.addr, &genuine);
    t.instance_id = "inst_other".into();
    t.mode = DeploymentMode::Sidecar;
    let err = open_session(&t, &Counting::default(), &options())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::SERVER_INFO_MISMATCH));
    assert!(err.is(Kind::IncompatibleServer));
    assert_eq!(err.metadata()["fields"], "instance_id,deployment_mode");
}

#[tokio::test]
async fn nothing_listening_is_a_transport_error_and_the_provider_is_not_asked() {
    let genuine = leaf();
    let addr = TcpListener::bind(any_port())
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let provider = Counting::default();
    let err = open_session(&target(addr, &genuine), &provider, &options())
        .await
        .unwrap_err();
    assert!(err.is(Kind::Transport), "{err}");
    assert_eq!(err.reason(), Some(reasons::UNREACHABLE));
    assert_eq!(err.code(), Some(crate::Code::Unavailable));
    assert_eq!(provider.0.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_stalled_handshake_is_tls_handshake_within_the_connect_timeout() {
    let genuine = leaf();
    // Accepts TCP and never answers the TLS hello.
    let silent = TcpListener::bind(any_port()).await.unwrap();
    let addr = silent.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            held.push(tcp);
        }
    });
    let quick = ClientOptions::builder()
        .connect_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let provider = Counting::default();
    let started = std::time::Instant::now();
    let err = open_session(&target(addr, &genuine), &provider, &quick)
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::TLS_HANDSHAKE), "{err}");
    assert!(err.is(Kind::TlsPolicy));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(provider.0.load(Ordering::SeqCst), 0);
    holder.abort();
}

#[tokio::test]
async fn get_server_info_is_retried_on_unavailable_within_the_policy() {
    let genuine = leaf();
    let worker = listen(any_port(), &genuine, Behaviour::Genuine).await;
    worker.fail_server_info(2);
    let quick = ClientOptions::builder()
        .retry(
            crate::options::RetryPolicy::builder()
                .initial_backoff(Duration::from_millis(1))
                .max_attempts(3)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let session = open_session(&target(worker.addr, &genuine), &Counting::default(), &quick)
        .await
        .unwrap();
    assert_eq!(session.server_info().instance_id, INSTANCE);
    let calls = worker
        .requests()
        .iter()
        .filter(|(m, _)| m == "GetServerInfo")
        .count();
    assert_eq!(calls, 3);

    worker.fail_server_info(1);
    let once = ClientOptions::builder()
        .retry(crate::options::RetryPolicy::none())
        .build()
        .unwrap();
    let err = open_session(&target(worker.addr, &genuine), &Counting::default(), &once)
        .await
        .unwrap_err();
    assert!(err.is(Kind::Transport), "{err}");
    assert_eq!(err.code(), Some(crate::Code::Unavailable));
}

#[tokio::test]
async fn a_connection_lost_mid_call_is_unavailable() {
    let genuine = leaf();
    let worker = listen(any_port(), &genuine, Behaviour::Genuine).await;
    let session = open_session(
        &target(worker.addr, &genuine),
        &Counting::default(),
        &options(),
    )
    .await
    .unwrap();
    worker.hang_get_run();
    let call = tokio::spawn(async move { get_run(&session).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(worker); // the worker dies with the call in flight
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is(Kind::Transport), "{err}");
    assert_eq!(err.code(), Some(crate::Code::Unavailable), "{err}");
}

#[tokio::test]
async fn connect_checks_and_a_refused_reconnect_are_logged_without_the_bearer() {
    let (logs, _guard) = crate::testing::log_capture::capture();
    let genuine = leaf();
    let worker = listen(any_port(), &genuine, Behaviour::Genuine).await;
    let addr = worker.addr;
    let session = open_session(&target(addr, &genuine), &Counting::default(), &options())
        .await
        .unwrap();
    get_run(&session).await.unwrap();
    drop(worker);
    let _hostile = listen(addr, &genuine, Behaviour::ForeignLeaf).await;
    for _ in 0..20 {
        match get_run(&session).await {
            Err(e) if e.is(Kind::Trust) => break,
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let text = logs.text();
    for expected in [
        "TLS 1.3 handshake verified against the pin",
        "bearer loaded from the credential provider after the trust checks",
        "connected",
        "trust check refused the worker's connection",
        "PIN_MISMATCH",
    ] {
        assert!(text.contains(expected), "no {expected:?} in:\n{text}");
    }
    // Every target and level was captured (tonic, hyper and h2 included): none holds the
    // bearer, nor its header.
    assert!(!text.contains(BEARER), "the bearer was logged:\n{text}");
    assert!(
        !text.contains(&BEARER[4..20]),
        "part of the bearer was logged"
    );
}
