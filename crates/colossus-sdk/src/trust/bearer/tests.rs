use super::*;

#[test]
fn the_grammar_bounds_length_and_characters() {
    assert!(is_valid_bearer(&"a".repeat(32)));
    assert!(is_valid_bearer(&"~".repeat(256)));
    assert!(!is_valid_bearer(&"a".repeat(31)));
    assert!(!is_valid_bearer(&"a".repeat(257)));
    assert!(!is_valid_bearer(&format!("{} ", "a".repeat(32))));
    assert!(!is_valid_bearer(&format!("{}é", "a".repeat(32))));
    assert!(!is_valid_bearer(&format!("{}\u{7f}", "a".repeat(32))));
}

#[test]
fn a_refusal_and_the_debug_form_never_show_the_value() {
    let secret = format!("s3cr3t-{}", "x".repeat(20));
    let err = Bearer::new(secret.clone()).unwrap_err();
    assert_eq!(err.reason(), Some(reasons::BEARER_MALFORMED));
    assert!(!format!("{err} {err:?}").contains("s3cr3t"));
    let ok = Bearer::new(format!("{secret}-long-enough")).unwrap();
    assert!(!format!("{ok:?}").contains("s3cr3t"));
    assert_eq!(ok.expose(), format!("{secret}-long-enough"));
}
