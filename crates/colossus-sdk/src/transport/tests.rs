//! The transport against in-process TLS listeners: a genuine worker, and the hostile ones
//! the pin policy must refuse (TLS 1.2 only, a foreign leaf, a leaf with a chain), first
//! on connect and then after a restart on the same port, where tonic's reconnect goes
//! through the connector again. Each refusal must be typed, and no listener may ever
//! see a request (so no bearer leaves the process) nor the provider be asked (C5).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin as StdPin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tonic::body::Body;
use tonic::{Request, Response, Status};

use super::{Session, Target, open_session};
use crate::backend::BoxFuture;
use crate::credentials::CredentialProvider;
use crate::grpc::GrpcSession;
use crate::model::DeploymentMode;
use crate::options::ClientOptions;
use crate::proto as p;
use crate::trust::bearer::Bearer;
use crate::trust::pin::Pin;
use crate::{Kind, Result, reasons};

pub(crate) const INSTANCE: &str = "inst_test";
pub(crate) const BEARER: &str = "cb1_test-bearer-0123456789abcdefghijklmnopqrstu";

/// A P-256 leaf for 127.0.0.1 (CA=false, as C2 asks) and its key.
pub(crate) struct Leaf {
    pub(crate) der: CertificateDer<'static>,
    pub(crate) key: Vec<u8>,
    pub(crate) pem: String,
}

pub(crate) fn leaf() -> Leaf {
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let cert = params.self_signed(&key).unwrap();
    Leaf {
        der: cert.der().clone(),
        key: key.serialize_der(),
        pem: cert.pem(),
    }
}

fn ca() -> CertificateDer<'static> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    params.self_signed(&key).unwrap().der().clone()
}

/// How a listener behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Behaviour {
    Genuine,
    Tls12Only,
    ForeignLeaf,
    Chain,
}

/// What a listener saw: every request's method and authorization header.
#[derive(Clone, Default)]
pub(crate) struct Seen(
    Arc<Mutex<Log>>,
    Arc<AtomicUsize>,
    Arc<std::sync::atomic::AtomicBool>,
);

/// (method, authorization header) of each request.
type Log = Vec<(String, Option<String>)>;

impl Seen {
    /// Makes GetRun calls hang until the listener is dropped.
    pub(crate) fn hang_get_run(&self) {
        self.2.store(true, Ordering::SeqCst);
    }

    fn hangs(&self) -> bool {
        self.2.load(Ordering::SeqCst)
    }

    /// Makes the next `n` GetServerInfo calls fail with UNAVAILABLE.
    pub(crate) fn fail_server_info(&self, n: usize) {
        self.1.store(n, Ordering::SeqCst);
    }

    pub(crate) fn requests(&self) -> Log {
        self.0.lock().unwrap().clone()
    }
}

/// A TLS listener answering GetServerInfo and GetRun, until dropped (then every
/// connection it accepted is cut too, as when a worker process dies).
pub(crate) struct Listener {
    pub(crate) addr: SocketAddr,
    pub(crate) seen: Seen,
    tasks: JoinSet<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

pub(crate) fn server_info() -> p::ServerInfo {
    p::ServerInfo {
        instance_id: INSTANCE.into(),
        api_package: "colossus.api.v1alpha1".into(),
        api_version: "v1alpha1".into(),
        api_major: 1,
        deployment_mode: p::DeploymentMode::SharedDaemon as i32,
        ..Default::default()
    }
}

type HttpFuture =
    StdPin<Box<dyn Future<Output = std::result::Result<http::Response<Body>, Infallible>> + Send>>;

fn answer(
    seen: Seen,
    info: p::ServerInfo,
    req: http::Request<hyper::body::Incoming>,
) -> HttpFuture {
    Box::pin(async move {
        let method = req
            .uri()
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let auth = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        seen.0.lock().unwrap().push((method.clone(), auth));
        let fail = method == "GetServerInfo"
            && seen
                .1
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        if fail {
            return Ok(Status::unavailable("not yet").into_http());
        }
        Ok(match method.as_str() {
            "GetServerInfo" => {
                let svc = tower::service_fn(move |_: Request<p::GetServerInfoRequest>| {
                    let info = info.clone();
                    async move {
                        Ok::<_, Status>(Response::new(p::GetServerInfoResponse {
                            server_info: Some(info),
                        }))
                    }
                });
                tonic::server::Grpc::new(tonic_prost::ProstCodec::default())
                    .unary(svc, req)
                    .await
            }
            "GetRun" if req.uri().path().contains("RunService") && seen.hangs() => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            "GetRun" => {
                let svc = tower::service_fn(|r: Request<p::GetRunRequest>| async move {
                    Ok::<_, Status>(Response::new(p::GetRunResponse {
                        run: Some(p::Run {
                            run_id: r.into_inner().run_id,
                            ..Default::default()
                        }),
                    }))
                });
                tonic::server::Grpc::new(tonic_prost::ProstCodec::default())
                    .unary(svc, req)
                    .await
            }
            _ => Status::unimplemented(method).into_http(),
        })
    })
}

/// Starts a listener on `addr` (port 0 for a fresh one) presenting `genuine` (or a
/// foreign leaf) as `behaviour` says.
pub(crate) async fn listen(addr: SocketAddr, genuine: &Leaf, behaviour: Behaviour) -> Listener {
    listen_with(addr, genuine, behaviour, server_info()).await
}

/// [`listen`] with the GetServerInfo answer given.
pub(crate) async fn listen_with(
    addr: SocketAddr,
    genuine: &Leaf,
    behaviour: Behaviour,
    info: p::ServerInfo,
) -> Listener {
    let foreign = leaf();
    let presented = if behaviour == Behaviour::ForeignLeaf {
        &foreign
    } else {
        genuine
    };
    let mut chain = vec![presented.der.clone()];
    if behaviour == Behaviour::Chain {
        chain.push(ca());
    }
    let versions: &[&rustls::SupportedProtocolVersion] = if behaviour == Behaviour::Tls12Only {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let provider = Arc::new(super::provider::ring());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            chain,
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(presented.key.clone())),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    // A listener that was just dropped frees its port once its aborted task is gone.
    let mut attempts = 0;
    let listener = loop {
        match TcpListener::bind(addr).await {
            Ok(l) => break l,
            Err(e) if attempts < 100 => {
                attempts += 1;
                let _ = e;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("cannot listen on {addr}: {e}"),
        }
    };
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let mut tasks = JoinSet::new();
    let seen2 = seen.clone();
    tasks.spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, seen, info) = (acceptor.clone(), seen2.clone(), info.clone());
            connections.spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |req| answer(seen.clone(), info.clone(), req));
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
            });
        }
    });
    Listener { addr, seen, tasks }
}

/// A provider that counts how often it is asked.
#[derive(Clone, Default)]
pub(crate) struct Counting(pub(crate) Arc<AtomicUsize>);

impl CredentialProvider for Counting {
    fn bearer(&self) -> BoxFuture<'_, Result<Bearer>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Bearer::new(BEARER.to_owned()) })
    }
}

pub(crate) fn target(addr: SocketAddr, leaf: &Leaf) -> Target {
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
    let seen = worker.seen.requests();
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
        assert!(
            hostile.seen.requests().is_empty(),
            "{behaviour:?} saw a request"
        );
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
            hostile.seen.requests().is_empty(),
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
    worker.seen.fail_server_info(2);
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
        .seen
        .requests()
        .iter()
        .filter(|(m, _)| m == "GetServerInfo")
        .count();
    assert_eq!(calls, 3);

    worker.seen.fail_server_info(1);
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
    worker.seen.hang_get_run();
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
