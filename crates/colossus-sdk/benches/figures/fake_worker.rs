//! The fake worker of the heap figure: this program again, in a child process, serving one
//! run of any length (the reference worker caps a run at 4,099 events) over TLS 1.3 with a
//! throw-away P-256 leaf, so the heap figure counts only the client.

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use futures_util::StreamExt;
use tonic::{Request, Response, Status};

use colossus_sdk::__bench::pb;

use crate::AnyResult;
use crate::worker::PrivateDir;

/// Set in the child that serves the long run: the number of events to serve.
pub(crate) const LONG_RUN_ENV: &str = "COLOSSUS_BENCH_LONG_RUN_EVENTS";
pub(crate) const LONG_RUN_ID: &str = "run_long";
pub(crate) const LONG_RUN_INSTANCE: &str = "wkr_bench";
pub(crate) const LONG_RUN_BEARER: &str = "cb1_benchbenchbenchbenchbenchbenchbenchbench";

/// The child serving the long run; it exits when its stdin closes.
pub(crate) struct LongRunServer {
    child: Child,
    pub(crate) dir: PathBuf,
    pub(crate) pin: String,
}

impl LongRunServer {
    pub(crate) fn start(events: u64) -> AnyResult<LongRunServer> {
        let mut child = Command::new(std::env::current_exe()?)
            .env(LONG_RUN_ENV, events.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
        let info: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| format!("the long-run server printed {line:?}: {e}"))?;
        let (Some(dir), Some(pin)) = (info["dir"].as_str(), info["pin"].as_str()) else {
            return Err(format!("the long-run server printed {line:?}").into());
        };
        Ok(LongRunServer {
            dir: PathBuf::from(dir),
            pin: pin.to_owned(),
            child,
        })
    }
}

/// Closing its stdin ends the child.
impl Drop for LongRunServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        if self.child.wait().is_err() {
            let _ = self.child.kill();
        }
    }
}

/// The child: serves one run of `n` events (GetServerInfo, GetRun, WatchRun) over TLS 1.3
/// with a throw-away P-256 leaf, its discovery files in a new private folder; prints the
/// folder and pin as one JSON line, then serves until stdin closes.
pub(crate) fn serve_long_run(n: u64) -> AnyResult<()> {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use sha2::Digest;

    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?;
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let cert = params.self_signed(&key)?;
    let pin: String = sha2::Sha256::digest(cert.der())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // ring on purpose, as in the SDK (src/transport/provider.rs): deprecated in rustls
    // 0.23.48 for lacking post-quantum key exchange, which loopback TLS does not need.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let runtime = tokio::runtime::Runtime::new()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let dir = PrivateDir::new("long-run")?;
    let write = |name: &str, data: &[u8]| -> AnyResult<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.0.join(name))?
            .write_all(data)?;
        Ok(())
    };
    let descriptor = serde_json::json!({
        "endpoint": format!("https://{addr}"),
        "instance_id": LONG_RUN_INSTANCE,
        "pid": std::process::id(),
        "api_version": "v1alpha1",
        "certificate_sha256": pin,
    });
    write("endpoint.json", descriptor.to_string().as_bytes())?;
    write("certificate.pem", cert.pem().as_bytes())?;

    runtime.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req| answer(n, req));
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
            });
        }
    });
    let ready = serde_json::json!({"dir": dir.0, "pin": pin});
    println!("{ready}");
    std::io::stdout().flush()?;
    // Serve until the parent closes stdin (or exits).
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    drop(runtime);
    Ok(())
}

fn grpc<T, U>() -> tonic::server::Grpc<tonic_prost::ProstCodec<T, U>>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    tonic::server::Grpc::new(tonic_prost::ProstCodec::default())
}

async fn answer(
    n: u64,
    req: http::Request<hyper::body::Incoming>,
) -> std::result::Result<http::Response<tonic::body::Body>, Infallible> {
    let method = req
        .uri()
        .path()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    Ok(match method.as_str() {
        "GetServerInfo" => {
            let svc = tower::service_fn(|_: Request<pb::GetServerInfoRequest>| async {
                Ok::<_, Status>(Response::new(pb::GetServerInfoResponse {
                    server_info: Some(pb::ServerInfo {
                        instance_id: LONG_RUN_INSTANCE.into(),
                        api_package: "colossus.api.v1alpha1".into(),
                        api_version: "v1alpha1".into(),
                        api_major: 1,
                        deployment_mode: pb::DeploymentMode::SharedDaemon as i32,
                        limits: Some(pb::Limits {
                            max_response_bytes: 4 << 20,
                            max_request_bytes: 2 << 20,
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                }))
            });
            grpc().unary(svc, req).await
        }
        "GetRun" => {
            let svc = tower::service_fn(move |_: Request<pb::GetRunRequest>| async move {
                Ok::<_, Status>(Response::new(pb::GetRunResponse {
                    run: Some(pb::Run {
                        run_id: LONG_RUN_ID.into(),
                        status: pb::RunStatus::Succeeded as i32,
                        last_sequence: n,
                        ..Default::default()
                    }),
                }))
            });
            grpc().unary(svc, req).await
        }
        "WatchRun" => {
            let svc = tower::service_fn(move |r: Request<pb::WatchRunRequest>| async move {
                let after = r.into_inner().after_sequence;
                let events = futures_util::stream::iter(after + 1..=n).map(move |seq| {
                    let payload = if seq == n {
                        pb::Payload::Terminated(pb::RunTerminated {
                            status: pb::RunStatus::Succeeded as i32,
                            result: None,
                        })
                    } else {
                        pb::Payload::OutputDelta(pb::OutputDelta {
                            text: format!("event {seq} of a long run"),
                        })
                    };
                    Ok(pb::WatchRunResponse {
                        event: Some(pb::RunEvent {
                            run_id: LONG_RUN_ID.into(),
                            sequence: seq,
                            event_time: None,
                            payload: Some(payload),
                        }),
                    })
                });
                Ok::<_, Status>(Response::new(events))
            });
            grpc().server_streaming(svc, req).await
        }
        _ => Status::unimplemented(method).into_http(),
    })
}
