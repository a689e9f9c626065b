//! The sidecar supervisor with fake workers (small Python programs that speak, or break,
//! the bootstrap exchange) and, when `COLOSSUS_REFERENCE_WORKER` names it (the rust_tests
//! session sets it and `COLOSSUS_REQUIRE_WORKER=1`), the reference worker itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::SidecarOptions;
use super::supervisor::SidecarSessions;
use crate::grpc::SessionSource;
use crate::model::DeploymentMode;
use crate::{Client, Kind, reasons};

/// The fake workers' bootstrap pipe reader (Python), shared by the scripts below.
macro_rules! read_exact_py {
    () => {
        r#"
def read_exact(fd, n):
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            sys.exit(5)
        out += chunk
    return out
"#
    };
}

/// A fake worker: reads the request from fd 3, starts a grandchild in its own process
/// group (to prove the whole group ends), then answers as `mode` says.
const FAKE: &str = concat!(
    "import json, os, struct, subprocess, sys, time",
    read_exact_py!(),
    r#"mode = sys.argv[1]
assert sys.argv[2:] == ["--sidecar", "--bootstrap-in-fd", "3", "--bootstrap-out-fd", "4"], sys.argv
request = json.loads(read_exact(3, struct.unpack(">I", read_exact(3, 4))[0]))
assert set(request) == {"version", "execution_boundary", "state_dir", "application_id", "grant"}, request
assert request["version"] == 2 and request["execution_boundary"] == "full_access", request
child = subprocess.Popen(["sleep", "60"])
with open(os.path.join(request["state_dir"], "grandchild.pid"), "w") as f:
    f.write(str(child.pid))
if mode == "eof":
    os._exit(3)
if mode == "silent":
    time.sleep(60)
body = {
    "malformed": b'{"version": 2, "endpoint": "https://localhost:1"}',
    "refused": json.dumps({"version": 2, "error": {"code": "bootstrap_invalid", "message": "no\x07"}}).encode(),
    "huge": b"",
}[mode]
header = struct.pack(">I", 70000 if mode == "huge" else len(body))
os.write(4, header + body)
time.sleep(60)
"#
);

fn state_dir(tag: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!(
        "colossus-sidecar-test-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn fake(mode: &str, dir: &Path) -> SidecarOptions {
    // Only the silent fake waits out the start-up bound; the others answer at once, and a
    // generous bound keeps a loaded CI machine's slow python3 start from reading as silence.
    let bound = if mode == "silent" { 3 } else { 30 };
    SidecarOptions::builder("python3", "app_test")
        .extra_args(["-c", FAKE, mode])
        .state_dir(dir)
        .startup_timeout(Duration::from_secs(bound))
        .build()
        .unwrap()
}

/// Whether `pid` names a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

async fn gone_within(pid: u32, limit: Duration) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_broken_bootstrap_is_typed_and_ends_the_whole_process_group() {
    for (mode, reason) in [
        ("malformed", reasons::BOOTSTRAP_MALFORMED),
        ("refused", reasons::BOOTSTRAP_REFUSED),
        ("huge", reasons::BOOTSTRAP_MALFORMED),
        ("eof", reasons::BOOTSTRAP_EOF),
        ("silent", reasons::BOOTSTRAP_TIMEOUT),
    ] {
        let dir = state_dir(mode);
        let err = Client::start_sidecar(fake(mode, &dir)).await.unwrap_err();
        assert!(err.is(Kind::Sidecar), "{mode}: {err}");
        assert_eq!(err.reason(), Some(reason), "{mode}: {err}");
        if mode == "refused" {
            assert_eq!(err.metadata()["code"], "bootstrap_invalid");
            assert!(
                err.message().ends_with("no?"),
                "control characters are masked: {err}"
            );
        }
        let pid: u32 = std::fs::read_to_string(dir.join("grandchild.pid"))
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            gone_within(pid, Duration::from_secs(3)).await,
            "{mode}: the worker's child outlived it"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[tokio::test]
async fn a_missing_program_is_named_with_the_fix() {
    let options = SidecarOptions::builder("/nonexistent/colossus-worker", "app_test")
        .build()
        .unwrap();
    let err = Client::start_sidecar(options).await.unwrap_err();
    assert_eq!(err.reason(), Some(reasons::SIDECAR_PROGRAM_NOT_FOUND));
    assert_eq!(err.metadata()["program"], "/nonexistent/colossus-worker");
    assert!(err.message().contains("pip install ./conformance"));
}

#[test]
fn options_are_checked_when_built() {
    let err = SidecarOptions::builder("w", "bad id").build().unwrap_err();
    assert_eq!(err.metadata()["field"], "application_id");
    let err = SidecarOptions::builder("w", "a")
        .max_restarts(4)
        .build()
        .unwrap_err();
    assert_eq!(err.metadata()["field"], "max_restarts");
    let err = SidecarOptions::builder("w", "a")
        .state_dir("relative")
        .build()
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::STATE_DIR_INVALID));
}

/// The reference worker, when the environment names it.
fn reference_worker() -> Option<String> {
    match std::env::var("COLOSSUS_REFERENCE_WORKER") {
        Ok(path) if !path.is_empty() => Some(path),
        _ => {
            assert!(
                std::env::var_os("COLOSSUS_REQUIRE_WORKER").is_none(),
                "COLOSSUS_REQUIRE_WORKER is set but COLOSSUS_REFERENCE_WORKER is not"
            );
            eprintln!(
                "COLOSSUS_REFERENCE_WORKER is not set: the reference-worker sidecar tests did not run"
            );
            None
        }
    }
}

fn real(worker: &str, dir: &Path, restarts: u32) -> SidecarOptions {
    SidecarOptions::builder(worker, "app_test")
        .state_dir(dir)
        .max_restarts(restarts)
        .restart_backoff(Duration::from_millis(10))
        .shutdown_grace(Duration::from_millis(200))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_reference_worker_restarts_within_its_budget_and_its_group_ends_on_close() {
    let Some(worker) = reference_worker() else {
        return;
    };
    let dir = state_dir("real");
    let sessions = SidecarSessions::new_for_test(real(&worker, &dir, 1))
        .await
        .unwrap();
    let first = sessions.current().await.unwrap();
    assert_eq!(first.server_info().deployment_mode, DeploymentMode::Sidecar);
    let instance = first.server_info().instance_id.clone();

    // The worker dies: the next call gets a restarted one (same state folder, so the same
    // instance), and the budget of one restart is then spent.
    let pgid = sessions.kill_for_test().await;
    assert!(gone_within(pgid as u32, Duration::from_secs(5)).await);
    let second = sessions.current().await.unwrap();
    assert_eq!(second.server_info().instance_id, instance);
    let pgid = sessions.kill_for_test().await;
    assert!(gone_within(pgid as u32, Duration::from_secs(5)).await);
    let err = sessions.current().await.err().expect("the budget is spent");
    assert_eq!(err.reason(), Some(reasons::SIDECAR_RESTARTS_EXHAUSTED));
    drop(sessions);

    let sessions = SidecarSessions::new_for_test(real(&worker, &dir, 0))
        .await
        .unwrap();
    let pgid = sessions.pgid_for_test();
    sessions.close();
    assert!(
        gone_within(pgid as u32, Duration::from_secs(5)).await,
        "close ends the group"
    );
    let err = sessions.current().await.err().expect("closed");
    assert!(err.is(Kind::ClientClosed));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_sidecar_client_serves_calls_and_its_worker_ends_when_dropped() {
    let Some(worker) = reference_worker() else {
        return;
    };
    let dir = state_dir("drop");
    let client = Client::start_sidecar(real(&worker, &dir, 0)).await.unwrap();
    let info = client.server_info().await.unwrap();
    assert_eq!(info.deployment_mode, DeploymentMode::Sidecar);
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid: &u32| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.contains("--bootstrap-in-fd") && c.contains(&worker))
        })
        .collect();
    assert!(!pids.is_empty());
    drop(client);
    for pid in pids {
        assert!(
            gone_within(pid, Duration::from_secs(5)).await,
            "drop ends the worker"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A worker that bootstraps with a genuine reply (argv[2]), then dies 300 ms later while
/// the client is still connecting to it.
const DIES_WHILE_CONNECTING: &str = concat!(
    "import os, struct, sys, time",
    read_exact_py!(),
    r#"read_exact(3, struct.unpack(">I", read_exact(3, 4))[0])
body = sys.argv[1].encode()
os.write(4, struct.pack(">I", len(body)) + body)
time.sleep(0.3)
os._exit(70)
"#
);

#[tokio::test]
async fn a_worker_that_dies_while_the_client_connects_ends_the_connect_at_once() {
    use crate::testing::credentials::BEARER;
    use crate::testing::fake_worker::INSTANCE;
    use crate::testing::tls::leaf;
    // The worker's listening socket outlives it (as when a tool process inherited it): it
    // accepts and never answers, so nothing but the exit itself can end the connect early.
    let genuine = leaf();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    let reply = serde_json::json!({
        "version": 2,
        "execution_boundary": "full_access",
        "api_version": crate::trust::descriptor::API_VERSION,
        "endpoint": format!("https://{addr}"),
        "instance_id": INSTANCE,
        "credential_id": "cred_test",
        "certificate_pem": genuine.pem,
        "certificate_sha256": crate::trust::pin::Pin::of_der(&genuine.der).to_hex(),
        "bearer": BEARER,
    });
    let dir = state_dir("dies-connecting");
    let options = SidecarOptions::builder("python3", "app_test")
        .extra_args(["-c", DIES_WHILE_CONNECTING, &reply.to_string()])
        .state_dir(&dir)
        .max_restarts(0)
        .startup_timeout(Duration::from_secs(30))
        .client_options(
            crate::options::ClientOptions::builder()
                .connect_timeout(Duration::from_secs(20))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let err = Client::start_sidecar(options).await.unwrap_err();
    // The exit was seen during the handshake and counted against the restart budget (none
    // here), long before the 20 s connect timeout.
    assert_eq!(
        err.reason(),
        Some(reasons::SIDECAR_RESTARTS_EXHAUSTED),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the connect waited {:?} on a worker that had exited",
        started.elapsed()
    );
    holder.abort();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fake worker whose bootstrap reply (argv[1], JSON) is well formed; it notes when it
/// replied (`replied` in the state folder, Unix seconds) and then stays alive.
const REPLIES: &str = concat!(
    "import json, os, struct, sys, time",
    read_exact_py!(),
    r#"request = json.loads(read_exact(3, struct.unpack(">I", read_exact(3, 4))[0]))
body = sys.argv[1].encode()
with open(os.path.join(request["state_dir"], "replied"), "w") as f:
    f.write(repr(time.time()))
os.write(4, struct.pack(">I", len(body)) + body)
time.sleep(60)
"#
);

#[tokio::test]
async fn a_refused_connect_to_a_live_sidecar_returns_at_once() {
    use crate::testing::credentials::BEARER;
    use crate::testing::fake_worker::{Behaviour, INSTANCE, listen};
    use crate::testing::tls::leaf;
    use crate::trust::pin::Pin;
    // A genuine bootstrap reply naming a listener that refuses TLS 1.3: a trust refusal
    // from a live worker, which no exit explains, so nothing waits for one.
    let genuine = leaf();
    let listener = listen(
        "127.0.0.1:0".parse().unwrap(),
        &genuine,
        Behaviour::Tls12Only,
    )
    .await;
    let reply = serde_json::json!({
        "version": 2,
        "execution_boundary": "full_access",
        "endpoint": format!("https://{}", listener.addr),
        "instance_id": INSTANCE,
        "credential_id": "cred_test",
        "api_version": "v1alpha1",
        "certificate_sha256": Pin::of_der(&genuine.der).to_hex(),
        "certificate_pem": genuine.pem,
        "bearer": BEARER,
    })
    .to_string();
    let dir = state_dir("refused-connect");
    let options = SidecarOptions::builder("python3", "app_test")
        .extra_args(["-c", REPLIES, reply.as_str()])
        .state_dir(&dir)
        .startup_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let err = Client::start_sidecar(options).await.unwrap_err();
    let returned = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(err.is(Kind::TlsPolicy), "{err}");
    assert_eq!(err.reason(), Some(reasons::TLS_VERSION));
    let replied: f64 = std::fs::read_to_string(dir.join("replied"))
        .unwrap()
        .parse()
        .unwrap();
    // Before the fix the first start waited a whole second for an exit that never came.
    assert!(
        returned - replied < 0.9,
        "the refusal took {:.3} s after the reply",
        returned - replied
    );
    assert!(
        listener.requests().is_empty(),
        "no request reached the refusing listener"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
