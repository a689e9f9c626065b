//! What the integration tests share: finding the reference worker, and the runs and
//! reads every scenario starts from, whichever placement serves it. Each test crate uses
//! a part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use futures_util::TryStreamExt;

use colossus_sdk::model::{Artifact, CreateRunRequest, ListRunsQuery, Run, RunPage};
use colossus_sdk::{Client, Kind};

/// `$COLOSSUS_REFERENCE_WORKER`, else `colossus-reference-worker` on PATH. Without one the
/// test says so on stderr and should return; with `COLOSSUS_REQUIRE_WORKER=1` (the nox
/// sessions set it) a missing worker fails instead.
pub fn reference_worker(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("COLOSSUS_REFERENCE_WORKER")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join("colossus-reference-worker"))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        assert!(
            std::env::var("COLOSSUS_REQUIRE_WORKER").as_deref() != Ok("1"),
            "COLOSSUS_REQUIRE_WORKER=1 but no reference worker was found (set COLOSSUS_REFERENCE_WORKER)"
        );
        // Straight to the process's stderr: the test harness captures eprintln!.
        let note = format!(
            "SKIPPED {test}: no reference worker; set COLOSSUS_REFERENCE_WORKER to run it\n"
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), note.as_bytes());
    }
    found
}

/// A run script (`colossus-script v1`, then one step per line).
pub fn script(lines: &str) -> CreateRunRequest {
    CreateRunRequest::text(format!("colossus-script v1\n{lines}\n"))
}

/// Starts a run of `script(lines)`.
pub async fn start_script(client: &Client, lines: &str) -> Run {
    client.runs().create(script(lines)).await.unwrap().run
}

/// Creates `count` plain runs, `run 0` to `run {count - 1}`.
pub async fn create_runs(client: &Client, count: usize) {
    for i in 0..count {
        let request = CreateRunRequest::text(format!("run {i}"));
        client.runs().create(request).await.unwrap();
    }
}

/// Every page of the application's runs, `page_size` at a time.
pub async fn all_pages(client: &Client, page_size: u32) -> Vec<RunPage> {
    let query = ListRunsQuery::new().page_size(page_size);
    client.runs().pages(query).try_collect().await.unwrap()
}

/// An upload is refused before sending when the worker lacks the `artifacts` capability.
pub async fn assert_upload_refused(client: &Client) {
    let err = client.artifacts().upload(b"x", "text/plain").await;
    assert!(err.unwrap_err().is(Kind::CapabilityMissing));
}

/// The stored artifact downloads as `data`, every check passed.
pub async fn assert_download(client: &Client, stored: &Artifact, data: &[u8]) {
    let back = client.artifacts().download(&stored.artifact_id).await;
    assert_eq!(back.unwrap().data, data);
}
