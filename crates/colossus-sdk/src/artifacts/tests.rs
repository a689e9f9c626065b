use super::*;

fn described(data: &[u8]) -> Artifact {
    Artifact::new(
        "a1",
        "text/plain",
        data.len() as u64,
        hex(&Sha256::digest(data)),
    )
}

#[test]
fn a_matching_download_is_returned() {
    let mut v = Verifier::new("a1", 0);
    v.feed(DownloadPart::Artifact(described(b"hello"))).unwrap();
    v.feed(DownloadPart::Chunk(b"hel".to_vec())).unwrap();
    v.feed(DownloadPart::Chunk(b"lo".to_vec())).unwrap();
    assert_eq!(v.finish().unwrap().data, b"hello");
}

#[test]
fn altered_short_long_and_misordered_downloads_fail() {
    let mut v = Verifier::new("a1", 0);
    v.feed(DownloadPart::Artifact(described(b"hello"))).unwrap();
    v.feed(DownloadPart::Chunk(b"jello".to_vec())).unwrap();
    let err = v.finish().unwrap_err();
    assert!(err.is(Kind::ArtifactIntegrity));
    assert_eq!(err.reason(), Some(reasons::ARTIFACT_DIGEST_MISMATCH));

    let mut v = Verifier::new("a1", 0);
    v.feed(DownloadPart::Artifact(described(b"hello"))).unwrap();
    v.feed(DownloadPart::Chunk(b"hell".to_vec())).unwrap();
    assert_eq!(
        v.finish().unwrap_err().reason(),
        Some(reasons::ARTIFACT_SIZE_MISMATCH)
    );

    let mut v = Verifier::new("a1", 0);
    v.feed(DownloadPart::Artifact(described(b"hi"))).unwrap();
    let err = v.feed(DownloadPart::Chunk(b"hi!".to_vec())).unwrap_err();
    assert_eq!(err.reason(), Some(reasons::ARTIFACT_SIZE_MISMATCH));

    let mut v = Verifier::new("a1", 0);
    assert_eq!(
        v.feed(DownloadPart::Chunk(b"x".to_vec()))
            .unwrap_err()
            .reason(),
        Some(reasons::ARTIFACT_STREAM_ORDER)
    );

    let mut v = Verifier::new("a2", 0);
    assert_eq!(
        v.feed(DownloadPart::Artifact(described(b"x")))
            .unwrap_err()
            .reason(),
        Some(reasons::ARTIFACT_STREAM_ORDER)
    );
}
