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
mod tests {
    use super::*;
    use crate::reasons;
    use std::os::unix::fs::symlink;

    fn temp_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("colossus-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    fn read(path: &Path) -> Result<Vec<u8>> {
        read_owner_only_file(path, 16, Kind::Descriptor, reasons::DESCRIPTOR_INVALID)
    }

    #[test]
    fn refuses_open_links_fifos_and_oversized_files() {
        let dir = temp_dir("refusals");
        let file = dir.join("endpoint.json");
        std::fs::write(&file, b"{}").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&file).unwrap(), b"{}");

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            read(&file)
                .unwrap_err()
                .message()
                .contains("readable or writable by others")
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();

        let link = dir.join("link.json");
        symlink(&file, &link).unwrap();
        assert!(read(&link).unwrap_err().message().contains("symbolic link"));

        std::fs::write(&file, [b' '; 17]).unwrap();
        assert!(
            read(&file)
                .unwrap_err()
                .message()
                .contains("larger than 16")
        );

        let fifo = dir.join("fifo.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(
            read(&fifo)
                .unwrap_err()
                .message()
                .contains("not a regular file")
        );
        assert!(
            read(&dir.join("absent"))
                .unwrap_err()
                .message()
                .contains("does not exist")
        );

        assert!(
            check_private_dir(
                &dir,
                Kind::Descriptor,
                reasons::DESCRIPTOR_INVALID,
                "the folder"
            )
            .is_ok()
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(
            check_private_dir(
                &dir,
                Kind::Descriptor,
                reasons::DESCRIPTOR_INVALID,
                "the folder"
            )
            .is_err()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
