use super::*;

#[test]
fn a_generated_key_is_made_once_and_in_the_contract_grammar() {
    let request = CreateRunRequest::text("hi");
    let key = request.idempotency_key().to_owned();
    assert!(key.starts_with("rs-") && key.len() == 39, "{key}");
    assert!(
        key.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
    );
    assert_eq!(request.clone().idempotency_key(), key);
    assert_ne!(CreateRunRequest::text("hi").idempotency_key(), key);
}

#[test]
fn a_given_key_is_used_as_given() {
    let request = CreateRunRequest::builder()
        .idempotency_key("")
        .text("x")
        .build();
    assert_eq!(request.idempotency_key(), "");
}
