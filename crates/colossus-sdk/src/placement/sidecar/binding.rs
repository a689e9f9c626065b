//! Executable binding for a managed sidecar (B16): the bytes the SDK verified are the bytes
//! that run.
//!
//! With [`SidecarOptionsBuilder::executable_sha256`](super::SidecarOptionsBuilder::executable_sha256)
//! set, the SDK reads the executable once into an anonymous memory file
//! (`memfd_create`), hashing what it copies, seals it against every change (`F_SEAL_WRITE`,
//! `F_SEAL_GROW`, `F_SEAL_SHRINK`, then `F_SEAL_SEAL`), hashes the sealed contents again,
//! reopens it read-only and starts the worker as `/proc/self/fd/5` with that descriptor
//! mapped to fd 5 of the child. A file swapped on disk after the check is never run: the
//! path is not opened again. Where no such mechanism exists (any OS but Linux, or no
//! `/proc`), a bound start fails closed instead of falling back to the path.
//!
//! What this binds, honestly: the bytes of the named file. For a native executable (the
//! desktop bundle's `colossus-sidecar`) that is the whole program. For a script with a
//! `#!` line (the Python reference worker's console entry point) the kernel starts the
//! named interpreter, which reads the script from `/proc/self/fd/5`: the script bytes are
//! bound, the interpreter and the modules it imports are not. Bind a native executable
//! where that matters.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::{Error, Kind, Result, reasons};

/// The child descriptor the sealed executable is mapped to.
pub(crate) const CHILD_EXEC_FD: i32 = 5;
/// The largest executable the SDK copies (a sidecar binary is tens of MiB).
const MAX_EXECUTABLE_BYTES: u64 = 512 << 20;

/// A sealed, read-only copy of a verified executable.
#[derive(Debug)]
pub(crate) struct SealedExecutable {
    pub(crate) fd: OwnedFd,
}

impl SealedExecutable {
    /// The path the child executes: its own mapped descriptor.
    pub(crate) fn program() -> String {
        format!("/proc/self/fd/{CHILD_EXEC_FD}")
    }
}

fn refused(binding: &str, message: &str) -> Error {
    Error::local(Kind::Sidecar, reasons::SIDECAR_SPAWN_FAILED, message)
        .with_metadata("binding", binding)
}

/// Reads `path` into a sealed memory file and checks it hashes to `expected`.
#[cfg(target_os = "linux")]
pub(crate) fn seal(path: &Path, expected: &[u8; 32]) -> Result<SealedExecutable> {
    use rustix::fs::{Mode, OFlags, SealFlags, fcntl_add_seals, memfd_create, open};

    let io =
        |binding: &str, message: &str, e: std::io::Error| refused(binding, message).with_source(e);
    let source = open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map_err(|e| io("unreadable", "cannot open the sidecar executable", e.into()))?;
    let mut source = std::fs::File::from(source);
    let memfd = memfd_create(
        "colossus-sidecar",
        rustix::fs::MemfdFlags::CLOEXEC
            | rustix::fs::MemfdFlags::ALLOW_SEALING
            | rustix::fs::MemfdFlags::EXEC,
    )
    .or_else(|_| {
        memfd_create(
            "colossus-sidecar",
            rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
        )
    })
    .map_err(|e| {
        io(
            "unsupported",
            "cannot create a sealed memory file",
            e.into(),
        )
    })?;
    let mut copy = std::fs::File::from(memfd);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0u64;
    loop {
        let n = source
            .read(&mut buf)
            .map_err(|e| io("unreadable", "cannot read the sidecar executable", e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_EXECUTABLE_BYTES {
            return Err(refused(
                "too_large",
                "the sidecar executable is larger than 512 MiB",
            ));
        }
        hasher.update(&buf[..n]);
        copy.write_all(&buf[..n])
            .map_err(|e| io("unsupported", "cannot fill the sealed memory file", e))?;
    }
    drop(source);
    let copied: [u8; 32] = hasher.finalize().into();
    if !bool::from(copied.ct_eq(expected)) {
        return Err(refused(
            "digest_mismatch",
            "the sidecar executable does not hash to the trusted digest",
        ));
    }
    fcntl_add_seals(
        &copy,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )
    .map_err(|e| io("unsupported", "cannot seal the memory file", e.into()))?;
    // A read-only description of the same sealed file: the kernel refuses to execute a
    // file that is open for writing, and the child gets nothing writable.
    let readonly = open(
        format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&copy)),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        io(
            "unsupported",
            "cannot reopen the sealed memory file (no /proc?)",
            e.into(),
        )
    })?;
    drop(copy);
    // Hash what will run, after sealing: the bytes cannot change from here on.
    let mut sealed = std::fs::File::from(readonly);
    let mut hasher = Sha256::new();
    std::io::copy(&mut sealed, &mut HashWriter(&mut hasher))
        .map_err(|e| io("unsupported", "cannot read the sealed memory file", e))?;
    let again: [u8; 32] = hasher.finalize().into();
    if !bool::from(again.ct_eq(expected)) {
        return Err(refused(
            "digest_mismatch",
            "the sealed copy does not hash to the trusted digest",
        ));
    }
    Ok(SealedExecutable { fd: sealed.into() })
}

/// No sealed-memory execution here: a bound start fails closed.
#[cfg(not(target_os = "linux"))]
pub(crate) fn seal(_path: &Path, _expected: &[u8; 32]) -> Result<SealedExecutable> {
    Err(refused(
        "unsupported",
        "this platform has no sealed in-memory execution; a bound sidecar cannot start",
    ))
}

struct HashWriter<'a>(&'a mut Sha256);

impl Write for HashWriter<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Parses 64 lower-case hex characters.
pub(crate) fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, chunk) in hex.as_bytes().chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(chunk).ok()?, 16).ok()?;
    }
    Some(out)
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
