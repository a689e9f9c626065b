//! The mutation harness (conformance/docs/mutants.md) plants bugs in a scratch copy of the
//! workspace (its Cargo.toml and Cargo.lock, crates/ and conformance/), installs the copy's
//! client (which links the mutated SDK) inside the copy with the list's build step
//! (conformance/mutants/rust.yaml), and names the copy in `COLOSSUS_RUST_SDK_DIR`. This
//! client then runs that binary in its place. Without the variable nothing happens.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

const SDK_DIR_ENV: &str = "COLOSSUS_RUST_SDK_DIR";
const REBUILT_ENV: &str = "COLOSSUS_RUST_CLIENT_REBUILT";
/// Where the list's build step installs the copy's client, relative to the copy.
const INSTALLED: &str = ".conformance-client/bin/colossus-conformance-client";

pub(crate) fn run_against_sdk_copy() -> Result<(), String> {
    let Some(dir) = std::env::var_os(SDK_DIR_ENV) else {
        return Ok(());
    };
    if std::env::var_os(REBUILT_ENV).is_some() {
        return Ok(());
    }
    let binary = Path::new(&dir).join(INSTALLED);
    if !binary.is_file() {
        return Err(format!("{} was not built", binary.display()));
    }
    // exec keeps the inherited bearer descriptor: it is opened only after this point.
    let err = Command::new(&binary)
        .args(std::env::args_os().skip(1))
        .env(REBUILT_ENV, "1")
        .exec();
    Err(format!("cannot run {}: {err}", binary.display()))
}
