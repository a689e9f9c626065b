use super::*;

#[test]
fn events_convert_with_their_payload_time_and_unknown_values() {
    let e = p::RunEvent {
        run_id: "r1".into(),
        sequence: u64::MAX,
        event_time: Some(prost_types::Timestamp {
            seconds: 10,
            nanos: 5,
        }),
        payload: Some(p::run_event::Payload::StatusChanged(p::StatusChanged {
            previous_status: 2,
            status: 77,
        })),
    };
    let out = event(e);
    assert_eq!(out.sequence, u64::MAX);
    assert_eq!(
        out.event_time,
        SystemTime::UNIX_EPOCH + Duration::new(10, 5)
    );
    assert_eq!(
        out.payload,
        EventPayload::StatusChanged {
            previous_status: m::RunStatus::Running,
            status: m::RunStatus::Unknown
        }
    );
    let empty = p::RunEvent::default();
    assert_eq!(event(empty).payload, EventPayload::Unknown);
}

#[test]
fn a_create_request_carries_every_field() {
    let r = m::CreateRunRequest::builder()
        .idempotency_key("k")
        .text("hi")
        .part(InputPart::artifact("a1"))
        .max_turns(3)
        .session_id("s1")
        .trace_context(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "",
        )
        .build();
    let out = create_request(&r);
    assert_eq!(out.idempotency_key, "k");
    assert_eq!(out.input.len(), 2);
    assert_eq!(out.mode, p::RunMode::Execute as i32);
    assert_eq!(out.max_turns, 3);
    assert_eq!(out.session_id.as_deref(), Some("s1"));
    assert_eq!(out.trace_context.unwrap().tracestate, "");
}
