use super::*;

#[test]
fn only_lower_case_hex_of_the_right_length_is_a_pin() {
    let good = "ab".repeat(32);
    assert!(is_pin(&good));
    assert!(!is_pin(&good.to_uppercase()));
    assert!(!is_pin(&"ab".repeat(31)));
    assert!(!is_pin(&format!("{good}0")));
    assert!(!is_pin(&format!("{}g", &good[..63])));
    assert!(!is_pin(&format!("{}é", &good[..62])));
    assert_eq!(Pin::parse(&good).unwrap().to_hex(), good);
}

#[test]
fn pins_compare_by_value() {
    let a = Pin::of_der(b"leaf");
    assert!(a.matches(&Pin::parse(&a.to_hex()).unwrap()));
    assert!(!a.matches(&Pin::of_der(b"other")));
}
