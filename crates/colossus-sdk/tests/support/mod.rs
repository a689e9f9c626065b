//! What the integration tests share: finding the reference worker.

use std::path::PathBuf;

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
