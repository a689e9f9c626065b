use super::*;
use prost::encoding::{encode_key, encode_varint};

fn event(text: &str) -> proto::RunEvent {
    proto::RunEvent {
        run_id: "r1".into(),
        sequence: 1,
        event_time: None,
        payload: Some(proto::run_event::Payload::OutputDelta(proto::OutputDelta {
            text: text.into(),
        })),
    }
}

/// `WatchRunResponse { event }` whose event carries `extra` (an encoded field this SDK
/// does not know) after its known fields.
fn response(event: &proto::RunEvent, extra: &[u8]) -> Vec<u8> {
    let mut inner = event.encode_to_vec();
    inner.extend_from_slice(extra);
    let mut out = Vec::new();
    encode_key(EVENT_FIELD, WireType::LengthDelimited, &mut out);
    encode_varint(inner.len() as u64, &mut out);
    out.extend_from_slice(&inner);
    out
}

/// Field 99 (unknown to every SDK today), a varint of `value`.
fn newer_field(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(99, WireType::Varint, &mut out);
    encode_varint(value, &mut out);
    out
}

#[test]
fn the_content_is_the_events_bytes_as_received() {
    let e = event("hello");
    let got = decode(&response(&e, &[])).unwrap();
    assert_eq!(got.event.as_ref(), Some(&e));
    assert_eq!(got.content, e.encode_to_vec());
}

#[test]
fn a_field_newer_than_the_sdk_is_part_of_the_content() {
    // prost decodes both the same (the unknown field is dropped); the bytes differ,
    // so a replay that changed only that field is WATCH_REPLAY_ALTERED.
    let e = event("hello");
    let first = decode(&response(&e, &newer_field(1))).unwrap();
    let replay = decode(&response(&e, &newer_field(2))).unwrap();
    assert_eq!(first.event, replay.event);
    assert_ne!(first.content, replay.content);
    assert_eq!(
        first.event.unwrap().encode_to_vec(),
        e.encode_to_vec(),
        "a re-encoding would not have seen it"
    );
}

#[test]
fn other_response_fields_are_skipped_and_garbage_is_refused() {
    let e = event("x");
    let mut message = newer_field(7);
    message.extend(response(&e, &[]));
    assert_eq!(decode(&message).unwrap().content, e.encode_to_vec());
    assert!(decode(&[0x0a, 0x05, 0x01]).is_err(), "a truncated event");
}
