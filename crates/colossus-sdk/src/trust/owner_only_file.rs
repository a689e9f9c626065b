//! Reading the discovery files (C1, C2) and checking the folders that hold them: owned by
//! this user, private, not links, not devices or FIFOs, bounded in size.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use crate::{Error, Kind, Result};

/// The effective user ID, read without `unsafe` (the crate forbids it).
fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn file_error(kind: Kind, reason: &str, name: &str, message: String) -> Error {
    Error::local(kind, reason, message).with_metadata("field", name)
}

/// Reads a regular file owned by this user with no group or other permission bits,
/// without following a final symbolic link. It opens non-blocking, so a FIFO planted in
/// place of the file is refused instead of hanging the caller.
pub(crate) fn read_owner_only_file(
    path: &Path,
    limit: usize,
    kind: Kind,
    reason: &str,
) -> Result<Vec<u8>> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let err = |message: String| file_error(kind, reason, &name, message);
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        let io = std::io::Error::from(e);
        if io.kind() == std::io::ErrorKind::NotFound {
            err(format!("{name} does not exist")).with_source(io)
        } else {
            err(format!("{name} cannot be opened (or is a symbolic link)")).with_source(io)
        }
    })?;
    let mut file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|_| err(format!("{name} cannot be inspected")))?;
    if !meta.file_type().is_file() {
        return Err(err(format!("{name} is not a regular file")));
    }
    if meta.uid() != current_uid() {
        return Err(err(format!("{name} is not owned by the current user")));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(err(format!(
            "{name} is readable or writable by others (mode must be 0600)"
        )));
    }
    if meta.len() > limit as u64 {
        return Err(err(format!("{name} is larger than {limit} bytes")));
    }
    let mut data = Vec::new();
    (&mut file)
        .take(limit as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|_| err(format!("{name} cannot be read")))?;
    if data.len() > limit {
        return Err(err(format!("{name} is larger than {limit} bytes")));
    }
    Ok(data)
}

/// Requires a real folder (not a link) owned by this user, mode 0700 or stricter.
pub(crate) fn check_private_dir(dir: &Path, kind: Kind, reason: &str, what: &str) -> Result<()> {
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| Error::local(kind, reason, format!("{what} does not exist")).with_source(e))?;
    if !meta.is_dir() {
        return Err(Error::local(
            kind,
            reason,
            format!("{what} is not a directory"),
        ));
    }
    if meta.uid() != current_uid() {
        return Err(Error::local(
            kind,
            reason,
            format!("{what} is not owned by the current user"),
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(Error::local(
            kind,
            reason,
            format!("{what} is open to others (mode must be 0700)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
