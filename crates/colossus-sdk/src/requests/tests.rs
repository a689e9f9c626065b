use super::*;
use crate::model::{PlanAction, PlanActionKind};

fn info(caps: &[&str]) -> ServerInfo {
    ServerInfo {
        capabilities: caps.iter().map(|c| (*c).to_owned()).collect(),
        ..ServerInfo::default()
    }
}

fn capability_of(err: &Error) -> &str {
    assert!(err.is(Kind::CapabilityMissing), "{err}");
    assert_eq!(err.reason(), Some(reasons::CAPABILITY_NOT_SUPPORTED));
    &err.metadata()["capability"]
}

#[test]
fn a_plan_action_needs_plans_continue() {
    let request = CreateRunRequest::builder()
        .text("go")
        .plan_action(PlanAction::new("run-1", 1, PlanActionKind::Revise))
        .build();
    let err = check_create(&request, &info(&[])).unwrap_err();
    assert_eq!(capability_of(&err), capabilities::PLANS_CONTINUE);
    check_create(&request, &info(&[capabilities::PLANS_CONTINUE])).unwrap();
}

#[test]
fn artifact_parts_need_artifacts_and_images_need_image_input() {
    let plain = CreateRunRequest::builder()
        .part(InputPart::artifact("a1"))
        .build();
    assert_eq!(
        capability_of(&check_create(&plain, &info(&[])).unwrap_err()),
        capabilities::ARTIFACTS
    );
    check_create(&plain, &info(&[capabilities::ARTIFACTS])).unwrap();
    let image = CreateRunRequest::builder()
        .part(InputPart::artifact_with_type("a1", "image/png"))
        .build();
    let err = check_create(&image, &info(&[capabilities::ARTIFACTS])).unwrap_err();
    assert_eq!(capability_of(&err), capabilities::IMAGE_INPUT);
}

#[test]
fn malformed_fields_are_refused_with_their_reason() {
    let bad_key = CreateRunRequest::builder()
        .idempotency_key("has space")
        .text("x")
        .build();
    let err = check_create(&bad_key, &info(&[])).unwrap_err();
    assert_eq!(err.reason(), Some(reasons::IDEMPOTENCY_KEY_INVALID));
    let empty = CreateRunRequest::builder().build();
    assert_eq!(
        check_create(&empty, &info(&[])).unwrap_err().reason(),
        Some(reasons::FIELD_INVALID)
    );
    let trace = CreateRunRequest::builder()
        .text("x")
        .trace_context("00-abc-def-01", "")
        .build();
    assert_eq!(
        check_create(&trace, &info(&[])).unwrap_err().metadata()["field"],
        "traceparent"
    );
    let good = CreateRunRequest::builder()
        .text("x")
        .trace_context(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "k=v",
        )
        .build();
    check_create(&good, &info(&[])).unwrap();
}

#[test]
fn end_user_ids_follow_the_grammar() {
    for good in ["u", "alice@example.com", "team:a.b+c_d-e", &"x".repeat(128)] {
        let request = CreateRunRequest::builder()
            .text("x")
            .end_user_id(good)
            .build();
        check_create(&request, &info(&[])).unwrap();
    }
    for bad in ["", "has space", "tab\t", "slash/", "é", &"x".repeat(129)] {
        let request = CreateRunRequest::builder()
            .text("x")
            .end_user_id(bad)
            .build();
        let err = check_create(&request, &info(&[])).unwrap_err();
        assert_eq!(err.metadata()["field"], "end_user_id", "{bad:?}");
    }
}

#[test]
fn advertised_limits_are_enforced() {
    let mut i = info(&[]);
    i.limits.max_turns = 3;
    i.limits.max_input_parts = 1;
    let turns = CreateRunRequest::builder().text("x").max_turns(4).build();
    assert_eq!(
        check_create(&turns, &i).unwrap_err().reason(),
        Some(reasons::MAX_TURNS_OUT_OF_RANGE)
    );
    let parts = CreateRunRequest::builder().text("x").text("y").build();
    assert_eq!(
        check_create(&parts, &i).unwrap_err().reason(),
        Some(reasons::INPUT_TOO_MANY_PARTS)
    );
}

#[test]
fn media_types_and_ids() {
    check_media_type("text/plain").unwrap();
    assert!(check_media_type("text").is_err());
    assert!(check_media_type("/plain").is_err());
    assert!(check_id("../etc", "run_id").is_err());
    check_id("run_01-A", "run_id").unwrap();
}
