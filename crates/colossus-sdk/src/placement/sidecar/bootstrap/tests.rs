use super::*;
use crate::placement::ManagedExecutionBoundary;

#[test]
fn the_request_carries_the_boundary_and_the_reply_must_report_it() {
    let request = Request {
        state_dir: "/state".into(),
        application_id: "app".into(),
        scopes: vec![],
        roles: vec![],
        tools: vec![],
        execution_boundary: ManagedExecutionBoundary::OfflineIsolated,
    };
    let frame = encode_request(&request).unwrap();
    let body: serde_json::Value = serde_json::from_slice(&frame[4..]).unwrap();
    assert_eq!(body["version"], 2);
    assert_eq!(body["execution_boundary"], "offline_isolated");

    let other = br#"{"version": 2, "execution_boundary": "full_access"}"#;
    let err = parse_reply_for(other, Some(ManagedExecutionBoundary::OfflineIsolated))
        .err()
        .unwrap();
    assert_eq!(err.reason(), Some(reasons::BOOTSTRAP_MALFORMED));
    let missing = br#"{"version": 2, "endpoint": "https://127.0.0.1:1"}"#;
    assert!(parse_reply_for(missing, Some(ManagedExecutionBoundary::FullAccess)).is_err());
    let old = br#"{"version": 1, "error": {"code": "x", "message": "y"}}"#;
    let err = parse_reply_for(old, Some(ManagedExecutionBoundary::FullAccess))
        .err()
        .unwrap();
    assert_eq!(err.reason(), Some(reasons::BOOTSTRAP_MALFORMED));
}
