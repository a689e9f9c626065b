//! B15, B16. The managed execution boundary travels in the sidecar bootstrap (version 2) and the
//! reference worker honours and reports it: `offline_isolated` hides the generic network
//! tools, `workspace_isolated` is refused by a worker without a workspace sandbox.
//!
//! The worker program is `$COLOSSUS_REFERENCE_WORKER`, else `colossus-reference-worker` on
//! PATH; without one each test says so and returns (a failure under
//! `COLOSSUS_REQUIRE_WORKER=1`).

use std::path::PathBuf;

use colossus_sdk::model::{CreateRunRequest, EventPayload, ToolActivityPhase};
use colossus_sdk::placement::{ManagedExecutionBoundary, SidecarOptions};
use colossus_sdk::{Client, Kind};
use futures_util::TryStreamExt;

mod support;
use support::{reference_worker, start_script};

fn state_dir(tag: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("colossus-boundary-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

async fn start(
    worker: PathBuf,
    tag: &str,
    boundary: ManagedExecutionBoundary,
) -> colossus_sdk::Result<Client> {
    let options = SidecarOptions::builder(worker, "boundary-app")
        .tools(["filesystem.read", "web.fetch"])
        .state_dir(state_dir(tag))
        .max_restarts(0)
        .execution_boundary(boundary)
        .build()?;
    Client::start_sidecar(options).await
}

/// The phases of the script's tool activities, in order.
async fn tool_phases(client: &Client) -> Vec<ToolActivityPhase> {
    let run = start_script(client, "tool web.fetch\ntool filesystem.read").await;
    let events: Vec<_> = client
        .runs()
        .watch(&run.run_id)
        .try_collect()
        .await
        .unwrap();
    events
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ToolActivity { phase, .. } => Some(*phase),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn offline_isolated_hides_the_network_tools_that_full_access_keeps() {
    let Some(worker) = reference_worker("offline_isolated") else {
        return;
    };
    let full = start(worker.clone(), "full", ManagedExecutionBoundary::FullAccess)
        .await
        .unwrap();
    let offline = start(worker, "offline", ManagedExecutionBoundary::OfflineIsolated)
        .await
        .unwrap();
    let (full_phases, offline_phases) = (tool_phases(&full).await, tool_phases(&offline).await);
    assert!(
        !full_phases.contains(&ToolActivityPhase::Failed),
        "{full_phases:?}"
    );
    assert!(
        offline_phases.contains(&ToolActivityPhase::Failed),
        "{offline_phases:?}"
    );
    assert!(
        offline_phases.contains(&ToolActivityPhase::Completed),
        "{offline_phases:?}"
    );
    full.close();
    offline.close();
}

#[tokio::test]
async fn a_worker_without_a_workspace_sandbox_refuses_workspace_isolated() {
    let Some(worker) = reference_worker("workspace_isolated") else {
        return;
    };
    let err = start(
        worker,
        "workspace",
        ManagedExecutionBoundary::WorkspaceIsolated,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), Kind::Sidecar);
    assert_eq!(
        err.metadata().get("code").map(String::as_str),
        Some("boundary_unsupported")
    );
}

/// The SHA-256 of a file, as 64 lower-case hex characters.
fn sha256_hex(path: &std::path::Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

// Executable binding: the worker's launcher script is copied once into a sealed memory file
// and run from there (its interpreter and modules are not bound: see the module docs).
#[tokio::test]
async fn a_bound_sidecar_runs_from_its_sealed_verified_copy() {
    let Some(worker) = reference_worker("bound sidecar") else {
        return;
    };
    let worker = std::fs::canonicalize(worker).unwrap();
    let options = SidecarOptions::builder(&worker, "bound-app")
        .state_dir(state_dir("bound"))
        .executable_sha256(sha256_hex(&worker))
        .build()
        .unwrap();
    let client = Client::start_sidecar(options).await.unwrap();
    let run = client
        .runs()
        .create(CreateRunRequest::text("hello"))
        .await
        .unwrap()
        .run;
    assert_eq!(
        client.runs().wait(&run.run_id).await.unwrap().run_id,
        run.run_id
    );
    client.close();

    let wrong = SidecarOptions::builder(&worker, "bound-app")
        .state_dir(state_dir("bound-wrong"))
        .executable_sha256("00".repeat(32))
        .build()
        .unwrap();
    let err = Client::start_sidecar(wrong).await.unwrap_err();
    assert_eq!(err.kind(), Kind::Sidecar);
    assert_eq!(
        err.metadata().get("binding").map(String::as_str),
        Some("digest_mismatch")
    );
}
