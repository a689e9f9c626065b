use std::os::unix::fs::PermissionsExt;

use command_fds::{CommandFdExt, FdMapping};

use super::*;

fn script(dir: &Path, body: &str) -> (std::path::PathBuf, [u8; 32]) {
    let path = dir.join("worker.sh");
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    (path, Sha256::digest(body.as_bytes()).into())
}

fn temp(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("colossus-binding-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    dir
}

fn run(sealed: SealedExecutable) -> String {
    let mut command = std::process::Command::new(SealedExecutable::program());
    command
        .fd_mappings(vec![FdMapping {
            parent_fd: sealed.fd,
            child_fd: CHILD_EXEC_FD,
        }])
        .unwrap();
    let out = command.output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

// The file is swapped between the check and the start: the verified bytes run.
#[test]
fn a_file_swapped_after_the_check_is_not_what_runs() {
    let dir = temp("swap");
    let (path, digest) = script(&dir, "#!/bin/sh\necho genuine\n");
    let sealed = seal(&path, &digest).unwrap();
    std::fs::write(&path, "#!/bin/sh\necho swapped\n").unwrap();
    assert_eq!(run(sealed), "genuine\n");
    // By path, the swapped file would have run.
    let direct = std::process::Command::new(&path).output().unwrap();
    assert_eq!(String::from_utf8(direct.stdout).unwrap(), "swapped\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_that_does_not_hash_to_the_trusted_digest_is_refused() {
    let dir = temp("mismatch");
    let (path, mut digest) = script(&dir, "#!/bin/sh\necho hi\n");
    digest[0] ^= 1;
    let err = seal(&path, &digest).unwrap_err();
    assert_eq!(
        err.metadata().get("binding").map(String::as_str),
        Some("digest_mismatch")
    );
    let link = dir.join("link");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    digest[0] ^= 1;
    assert!(
        seal(&link, &digest).is_err(),
        "a symbolic link is not followed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_sealed_copy_cannot_be_written() {
    let dir = temp("sealed");
    let (path, digest) = script(&dir, "#!/bin/sh\necho hi\n");
    let sealed = seal(&path, &digest).unwrap();
    let seals = rustix::fs::fcntl_get_seals(&sealed.fd).unwrap();
    assert!(seals.contains(rustix::fs::SealFlags::WRITE | rustix::fs::SealFlags::SEAL));
    let reopened = rustix::fs::open(
        format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&sealed.fd)
        ),
        rustix::fs::OFlags::RDWR,
        rustix::fs::Mode::empty(),
    );
    if let Ok(fd) = reopened {
        assert!(rustix::io::write(&fd, b"x").is_err());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn digests_are_64_lower_case_hex() {
    assert!(parse_digest(&"ab".repeat(32)).is_some());
    assert!(parse_digest(&"AB".repeat(32)).is_none());
    assert!(parse_digest("ab").is_none());
}
