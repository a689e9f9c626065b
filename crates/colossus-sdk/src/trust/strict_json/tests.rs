use super::*;

#[test]
fn reads_one_object_with_its_members_in_order() {
    let m =
        parse_object(br#" {"a": 1, "b": ["x", {"c": null}], "d": "\u00e9\ud83d\ude00"} "#).unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(member(&m, "a").unwrap().as_positive_int(), Some(1));
    assert_eq!(member(&m, "d").unwrap().as_str(), Some("é😀"));
}

#[test]
fn refuses_what_a_lenient_reader_lets_through() {
    for (raw, want) in [
        (&br#"{"a":1,"a":2}"#[..], "twice"),
        (br#"{"x":{"a":1,"a":2}}"#, "twice"),
        (br#"{"a":1} {}"#, "after"),
        (br#"[1]"#, "object"),
        (br#"{"a":01}"#, "valid JSON"),
        (br#"{"a":1,}"#, "valid JSON"),
        (b"{\"a\":\"\x01\"}", "valid JSON"),
        (b"\xef\xbb\xbf{}", "valid JSON"),
        (b"{\"a\":\"\xff\"}", "UTF-8"),
        (br#"{"a":NaN}"#, "valid JSON"),
        (br#"{"a":'x'}"#, "valid JSON"),
        (b"", "valid JSON"),
    ] {
        let err = parse_object(raw).unwrap_err();
        assert!(
            err.contains(want),
            "{:?}: {err}",
            String::from_utf8_lossy(raw)
        );
    }
    let deep = format!(
        "{}{}",
        r#"{"a":"#.repeat(40),
        "1".to_owned() + &"}".repeat(40)
    );
    assert!(
        parse_object(deep.as_bytes())
            .unwrap_err()
            .contains("deeply")
    );
}

#[test]
fn integers_are_plain_positive_literals() {
    for (text, want) in [
        ("1", Some(1)),
        ("0", None),
        ("-1", None),
        ("1.0", None),
        ("1e0", None),
        ("99999999999999999999", None),
    ] {
        assert_eq!(Value::Number(text.into()).as_positive_int(), want, "{text}");
    }
    assert_eq!(Value::String("1".into()).as_positive_int(), None);
}
