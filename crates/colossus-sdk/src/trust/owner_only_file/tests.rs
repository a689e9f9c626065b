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
