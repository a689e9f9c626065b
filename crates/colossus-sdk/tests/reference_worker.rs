//! Integration tests against the reference worker over real, pinned TLS 1.3.
//!
//! The worker program is `$COLOSSUS_REFERENCE_WORKER`, else `colossus-reference-worker` on
//! PATH. Without one each test says so on stderr and returns; with
//! `COLOSSUS_REQUIRE_WORKER=1` (the nox session sets it) a missing worker fails instead.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use colossus_sdk::credentials::InMemoryCredentialProvider;
use colossus_sdk::model::*;
use colossus_sdk::options::ClientOptions;
use colossus_sdk::placement::{DaemonOptions, SidecarOptions};
use colossus_sdk::{Bearer, Client, Kind, reasons};

mod support;
use support::{
    all_pages, assert_download, assert_upload_refused, create_runs, reference_worker, script,
    start_script,
};

/// A `dev` worker on a private folder, stopped when dropped.
struct DevWorker {
    _child: Child,
    dir: tempdir::Dir,
    instance_id: String,
    pin: String,
    bearer_path: PathBuf,
}

mod tempdir {
    use std::os::unix::fs::DirBuilderExt;
    use std::path::{Path, PathBuf};

    /// A private (0700) folder removed on drop.
    pub(crate) struct Dir(PathBuf);

    impl Dir {
        pub(crate) fn new(name: &str) -> Dir {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).unwrap();
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            let path = std::env::temp_dir().join(format!("colossus-rs-{name}-{hex}"));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&path)
                .unwrap();
            Dir(path)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn field(line: &str, name: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).expect("dev prints JSON");
    let mut v = &value;
    for part in name.split('.') {
        v = &v[part];
    }
    v.as_str()
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .to_owned()
}

impl DevWorker {
    /// A worker for `test`, or `None` (said on stderr) when there is no worker program.
    async fn for_test(test: &str) -> Option<DevWorker> {
        let exe = reference_worker(test)?;
        Some(DevWorker::start(&exe, &[]).await)
    }

    async fn start(exe: &Path, extra: &[&str]) -> DevWorker {
        let dir = tempdir::Dir::new("dev");
        let mut child = Command::new(exe)
            .arg("dev")
            .arg("--public-api-dir")
            .arg(dir.path())
            .args(["--json", "--log-level", "WARNING"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start the reference worker");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("dev printed its connection details in time")
            .unwrap()
            .expect("a line");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let endpoint = dir.path().join("endpoint.json");
        for _ in 0..600 {
            if endpoint.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        DevWorker {
            _child: child,
            instance_id: field(&line, "instance_id"),
            pin: field(&line, "certificate_sha256"),
            bearer_path: PathBuf::from(field(&line, "bearer.path")),
            dir,
        }
    }

    async fn connect(&self) -> Client {
        self.connect_with(ClientOptions::default()).await
    }

    async fn connect_with(&self, client_options: ClientOptions) -> Client {
        let bearer = std::fs::read_to_string(&self.bearer_path).unwrap();
        let options = DaemonOptions::builder()
            .public_api_dir(self.dir.path())
            .expected_instance_id(&self.instance_id)
            .expected_certificate_sha256(&self.pin)
            .credentials(InMemoryCredentialProvider::new(
                Bearer::new(bearer.trim().to_owned()).unwrap(),
            ))
            .client_options(client_options)
            .build()
            .unwrap();
        Client::connect(options)
            .await
            .expect("connect to the dev worker")
    }
}

#[tokio::test]
async fn a_scripted_run_is_watched_answered_and_reconciled_over_tls() {
    let Some(worker) =
        DevWorker::for_test("a_scripted_run_is_watched_answered_and_reconciled_over_tls").await
    else {
        return;
    };
    let client = worker.connect().await;
    let info = client.server_info().await.unwrap();
    assert_eq!(info.instance_id, worker.instance_id);
    assert_eq!(info.deployment_mode, DeploymentMode::SharedDaemon);

    let created = client
        .runs()
        .create(script("say hello\nask Continue? | yes | no\nsay done"))
        .await
        .unwrap();
    let run_id = created.run.run_id.clone();
    let mut watch = client.runs().watch(&run_id);
    let mut sequences = Vec::new();
    let mut text = String::new();
    while let Some(event) = watch.next().await {
        let event = event.unwrap();
        sequences.push(event.sequence);
        match &event.payload {
            EventPayload::OutputDelta { text: t } => text.push_str(t),
            EventPayload::InteractionRequested(i) => {
                client
                    .runs()
                    .respond(&run_id, &i.interaction_id, Answer::choice("yes"))
                    .await
                    .unwrap();
            }
            _ => {}
        }
    }
    assert!(watch.is_complete());
    assert_eq!(text, "hellodone");
    assert_eq!(sequences, (1..=sequences.len() as u64).collect::<Vec<_>>());
    let run = client.runs().wait(&run_id).await.unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(run.last_sequence, watch.last_sequence());

    client.close();
}

/// A different request under the first one's key.
fn created_request_again(created: &CreateRunResult) -> CreateRunRequest {
    CreateRunRequest::builder()
        .idempotency_key(created.idempotency_key.clone())
        .text("something else")
        .build()
}

#[tokio::test]
async fn idempotency_paging_resume_and_cancel_against_the_worker() {
    let Some(worker) =
        DevWorker::for_test("idempotency_paging_resume_and_cancel_against_the_worker").await
    else {
        return;
    };
    // Seven creates in a row meet the worker's create rate limit: the opt-in retry sends
    // each refused one again with its key after the worker's RetryInfo delay.
    let options = ClientOptions::builder()
        .rate_limit_retries(10)
        .build()
        .unwrap();
    let client = worker.connect_with(options).await;

    let request = CreateRunRequest::text("echo me");
    let first = client.runs().create(request.clone()).await.unwrap();
    let again = client.runs().create(request).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.run.run_id, first.run.run_id);
    let conflict = client
        .runs()
        .create(created_request_again(&first))
        .await
        .unwrap_err();
    assert!(conflict.is(Kind::IdempotencyConflict), "{conflict}");
    assert_eq!(conflict.reason(), Some(reasons::IDEMPOTENCY_CONFLICT));

    create_runs(&client, 4).await;
    let pages = all_pages(&client, 2).await;
    let total: usize = pages.iter().map(|p| p.runs.len()).sum();
    assert_eq!(total, 5);
    assert!(pages.len() >= 3, "{} pages", pages.len());

    // Resume a watch from a stored cursor: nothing repeated, nothing skipped.
    let long = start_script(&client, "repeat 5 say x\nsleep 200\nsay y").await;
    let mut watch = client.runs().watch(&long.run_id);
    let first_event = watch.next().await.unwrap().unwrap();
    let cursor = watch.last_sequence();
    assert_eq!(first_event.sequence, cursor);
    drop(watch);
    let rest: Vec<RunEvent> = client
        .runs()
        .watch_after(&long.run_id, cursor)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(rest.first().unwrap().sequence, cursor + 1);
    assert!(rest.last().unwrap().is_terminal());

    let sleeper = start_script(&client, "sleep forever").await;
    client.runs().cancel(&sleeper.run_id).await.unwrap();
    let ended = client.runs().wait(&sleeper.run_id).await.unwrap();
    assert_eq!(ended.status, RunStatus::Cancelled);
    client.close();
}

#[tokio::test]
async fn artifacts_round_trip_and_a_wrong_pin_is_refused() {
    let Some(worker) = DevWorker::for_test("artifacts_round_trip_and_a_wrong_pin_is_refused").await
    else {
        return;
    };
    let client = worker.connect().await;
    let info = client.server_info().await.unwrap();
    if info.has_capability(capabilities::ARTIFACTS) {
        let data = "artifact bytes ".repeat(10_000).into_bytes();
        let stored = client
            .artifacts()
            .upload(&data, "text/plain")
            .await
            .unwrap();
        assert_download(&client, &stored, &data).await;
    } else {
        assert_upload_refused(&client).await;
    }

    let bearer = std::fs::read_to_string(&worker.bearer_path).unwrap();
    let wrong_pin = DaemonOptions::builder()
        .public_api_dir(worker.dir.path())
        .expected_instance_id(&worker.instance_id)
        .expected_certificate_sha256("0".repeat(64))
        .credentials(InMemoryCredentialProvider::new(
            Bearer::new(bearer.trim().to_owned()).unwrap(),
        ))
        .build()
        .unwrap();
    let err = Client::connect(wrong_pin).await.unwrap_err();
    assert!(err.is(Kind::Trust), "{err}");
}

#[tokio::test]
async fn a_sidecar_is_started_used_and_stopped() {
    let Some(exe) = reference_worker("a_sidecar_is_started_used_and_stopped") else {
        return;
    };
    let state = tempdir::Dir::new("sidecar");
    let options = SidecarOptions::builder(&exe, "rust-sdk-tests")
        .scopes(["runs:execute", "runs:read", "runs:control"])
        .state_dir(state.path())
        .build()
        .unwrap();
    let client = Client::start_sidecar(options).await.unwrap();
    let info = client.server_info().await.unwrap();
    assert_eq!(info.deployment_mode, DeploymentMode::Sidecar);
    let run = start_script(&client, "say one\nsay two").await;
    let text: Vec<String> = client
        .runs()
        .text_stream(&run.run_id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(text.concat(), "onetwo");
    let ended = client.runs().wait(&run.run_id).await.unwrap();
    assert_eq!(ended.status, RunStatus::Succeeded);
    client.close();
    let err = client.runs().get(&run.run_id).await.unwrap_err();
    assert!(err.is(Kind::ClientClosed), "{err}");
}
