//! The in-process fake worker the unit tests share: a hand-written gRPC service whose
//! answers each test scripts in advance, served by hyper on loopback in plain HTTP/2 (the
//! gRPC backend's tests; trust is tested on its own) or behind TLS as a genuine or a
//! hostile listener (the transport's, the daemon's and the sidecar's tests). It records
//! every request's method and authorization header, so a test can prove that no bearer
//! reached a listener it must refuse.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tonic::body::Body;
use tonic::{Request, Response, Status};

use super::tls::{Leaf, ca, leaf};
use crate::proto as p;

/// The instance the fake reports by default.
pub(crate) const INSTANCE: &str = "inst_test";

/// A scripted answer: the message, or the status to fail with.
pub(crate) type Answer<T> = std::result::Result<T, Status>;

/// What the fake answers, in order.
#[derive(Default)]
pub(crate) struct Script {
    /// GetServerInfo's answer.
    pub(crate) server_info: p::ServerInfo,
    /// CreateRun's answers; once spent, INTERNAL.
    pub(crate) creates: VecDeque<Answer<p::CreateRunResponse>>,
    /// GetRun's answers; once spent, the run asked for with nothing else set.
    pub(crate) gets: VecDeque<Answer<p::Run>>,
    /// Each WatchRun's events and failures; once spent, a stream that ends at once.
    pub(crate) watches: VecDeque<Vec<Answer<p::RunEvent>>>,
}

/// The GetServerInfo answer of a genuine shared daemon named [`INSTANCE`].
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

#[derive(Default)]
struct State {
    script: Script,
    /// (method, authorization header) of every request, in order.
    requests: Vec<(String, Option<String>)>,
    /// (method, what it asked for) of every scripted call: a CreateRun's idempotency key,
    /// a GetRun's run ID, a WatchRun's cursor.
    asked: Vec<(String, String)>,
    /// How many more GetServerInfo calls fail with UNAVAILABLE.
    failing_server_infos: usize,
    /// Whether GetRun hangs until the listener is dropped.
    hang_get_run: bool,
}

/// A fake worker; clones share its script and its record.
#[derive(Clone, Default)]
pub(crate) struct FakeWorker(Arc<Mutex<State>>);

impl FakeWorker {
    pub(crate) fn new(script: Script) -> FakeWorker {
        FakeWorker(Arc::new(Mutex::new(State {
            script,
            ..State::default()
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap()
    }

    /// (method, authorization header) of every request so far.
    pub(crate) fn requests(&self) -> Vec<(String, Option<String>)> {
        self.state().requests.clone()
    }

    /// What each call of `method` asked for (see [`State::asked`]).
    pub(crate) fn asked(&self, method: &str) -> Vec<String> {
        let state = self.state();
        let asked = state.asked.iter().filter(|(m, _)| m == method);
        asked.map(|(_, what)| what.clone()).collect()
    }

    /// Makes the next `n` GetServerInfo calls fail with UNAVAILABLE.
    pub(crate) fn fail_server_info(&self, n: usize) {
        self.state().failing_server_infos = n;
    }

    /// Makes GetRun calls hang until the listener is dropped.
    pub(crate) fn hang_get_run(&self) {
        self.state().hang_get_run = true;
    }

    fn ask(&self, method: &str, what: String) {
        self.state().asked.push((method.to_owned(), what));
    }

    /// Serves plain HTTP/2 (prior knowledge) on a fresh loopback port.
    pub(crate) async fn serve_plain(self) -> Listener {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await;
        self.serve(listener, None)
    }

    /// Serves TLS on `addr` (port 0 for a fresh one), presenting `genuine` or, as
    /// `behaviour` says, a foreign leaf, a chain or TLS 1.2 only.
    pub(crate) async fn serve_tls(
        self,
        addr: SocketAddr,
        genuine: &Leaf,
        behaviour: Behaviour,
    ) -> Listener {
        let acceptor = acceptor(genuine, behaviour);
        let listener = bind(addr).await;
        self.serve(listener, Some(acceptor))
    }

    fn serve(self, listener: TcpListener, tls: Option<tokio_rustls::TlsAcceptor>) -> Listener {
        let addr = listener.local_addr().unwrap();
        let mut tasks = JoinSet::new();
        let worker = self.clone();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (tls, worker) = (tls.clone(), worker.clone());
                connections.spawn(async move {
                    match tls {
                        None => worker.serve_connection(tcp).await,
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                worker.serve_connection(stream).await;
                            }
                        }
                    }
                });
            }
        });
        Listener {
            addr,
            worker: self,
            tasks,
        }
    }

    async fn serve_connection(self, io: impl AsyncRead + AsyncWrite + Unpin + Send + 'static) {
        let service = hyper::service::service_fn(move |req| self.clone().answer(req));
        let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .serve_connection(hyper_util::rt::TokioIo::new(io), service)
            .await;
    }

    async fn answer(
        self,
        req: http::Request<hyper::body::Incoming>,
    ) -> std::result::Result<http::Response<Body>, Infallible> {
        let method = method_of(req.uri().path()).to_owned();
        let auth = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (fail, hang) = {
            let mut state = self.state();
            state.requests.push((method.clone(), auth));
            let fail = method == "GetServerInfo" && state.failing_server_infos > 0;
            if fail {
                state.failing_server_infos -= 1;
            }
            (fail, method == "GetRun" && state.hang_get_run)
        };
        if fail {
            return Ok(Status::unavailable("not yet").into_http());
        }
        if hang {
            std::future::pending::<()>().await;
        }
        Ok(match method.as_str() {
            "GetServerInfo" => self.unary(req, get_server_info).await,
            "CreateRun" => self.unary(req, create_run).await,
            "GetRun" => self.unary(req, get_run).await,
            "WatchRun" => {
                let svc = tower::service_fn(move |r: Request<p::WatchRunRequest>| {
                    let fake = self.clone();
                    async move {
                        fake.ask("WatchRun", r.get_ref().after_sequence.to_string());
                        let items = fake.state().script.watches.pop_front();
                        let stream =
                            futures_util::stream::iter(items.unwrap_or_default()).map(|item| {
                                item.map(|event| p::WatchRunResponse { event: Some(event) })
                            });
                        Ok::<_, Status>(Response::new(stream))
                    }
                });
                grpc().server_streaming(svc, req).await
            }
            _ => Status::unimplemented(method).into_http(),
        })
    }

    /// A unary call answered by `answer` from the decoded request.
    async fn unary<Q, R>(
        self,
        req: http::Request<hyper::body::Incoming>,
        answer: fn(&FakeWorker, Q) -> Answer<R>,
    ) -> http::Response<Body>
    where
        Q: prost::Message + Default + Send + 'static,
        R: prost::Message + Send + 'static,
    {
        let svc = tower::service_fn(move |r: Request<Q>| {
            let fake = self.clone();
            async move { answer(&fake, r.into_inner()).map(Response::new) }
        });
        grpc().unary(svc, req).await
    }
}

/// The RPC's name: the last segment of `/package.Service/Method`.
fn method_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

fn get_server_info(
    fake: &FakeWorker,
    _: p::GetServerInfoRequest,
) -> Answer<p::GetServerInfoResponse> {
    Ok(p::GetServerInfoResponse {
        server_info: Some(fake.state().script.server_info.clone()),
    })
}

fn create_run(fake: &FakeWorker, r: p::CreateRunRequest) -> Answer<p::CreateRunResponse> {
    fake.ask("CreateRun", r.idempotency_key);
    let next = fake.state().script.creates.pop_front();
    next.unwrap_or_else(|| Err(Status::internal("unscripted")))
}

fn get_run(fake: &FakeWorker, r: p::GetRunRequest) -> Answer<p::GetRunResponse> {
    fake.ask("GetRun", r.run_id.clone());
    let next = fake.state().script.gets.pop_front();
    let run = next.unwrap_or_else(|| {
        Ok(p::Run {
            run_id: r.run_id,
            ..Default::default()
        })
    })?;
    Ok(p::GetRunResponse { run: Some(run) })
}

fn grpc<T, U>() -> tonic::server::Grpc<tonic_prost::ProstCodec<T, U>>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    tonic::server::Grpc::new(tonic_prost::ProstCodec::default())
}

/// A listener that was just dropped frees its port once its aborted task is gone.
async fn bind(addr: SocketAddr) -> TcpListener {
    let mut attempts = 0;
    loop {
        match TcpListener::bind(addr).await {
            Ok(l) => return l,
            Err(_) if attempts < 100 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("cannot listen on {addr}: {e}"),
        }
    }
}

/// How a TLS listener presents itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Behaviour {
    Genuine,
    Tls12Only,
    ForeignLeaf,
    Chain,
}

fn acceptor(genuine: &Leaf, behaviour: Behaviour) -> tokio_rustls::TlsAcceptor {
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
    let provider = Arc::new(crate::transport::provider::ring());
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
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// A served fake worker, until dropped (then every connection it accepted is cut too, as
/// when a worker process dies). Reads through to its [`FakeWorker`].
pub(crate) struct Listener {
    pub(crate) addr: SocketAddr,
    worker: FakeWorker,
    tasks: JoinSet<()>,
}

impl Deref for Listener {
    type Target = FakeWorker;

    fn deref(&self) -> &FakeWorker {
        &self.worker
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// A genuine-scripted TLS listener on `addr` (port 0 for a fresh one).
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
    let script = Script {
        server_info: info,
        ..Script::default()
    };
    FakeWorker::new(script)
        .serve_tls(addr, genuine, behaviour)
        .await
}
