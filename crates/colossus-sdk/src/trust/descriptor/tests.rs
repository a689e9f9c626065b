use super::*;

#[test]
fn endpoints_are_literal_loopback_addresses_with_a_port() {
    assert_eq!(
        parse_endpoint("https://127.0.0.1:1").unwrap().addr,
        "127.0.0.1:1".parse().unwrap()
    );
    assert_eq!(
        parse_endpoint("https://[::1]:65535").unwrap().addr,
        "[::1]:65535".parse().unwrap()
    );
    for bad in [
        "https://127.0.0.1:0",
        "https://127.0.0.1:65536",
        "https://127.0.0.1:080",
        "https://127.0.0.1:+80",
        "https://127.0.0.1:80/",
        "https://localhost:80",
        "http://127.0.0.1:80",
        "https://127.0.0.2:80",
        "https://[::ffff:127.0.0.1]:80",
        "https://u@127.0.0.1:80",
        "HTTPS://127.0.0.1:80",
        "https://127.0.0.1:８0",
    ] {
        let err = parse_endpoint(bad).unwrap_err();
        assert_eq!(err.reason(), Some(reasons::DESCRIPTOR_INVALID), "{bad}");
        assert!(err.is(Kind::Trust));
    }
}

#[test]
fn a_malformed_pin_in_the_descriptor_is_descriptor_invalid() {
    // The reason every SDK gives (docs/requirements.md, S9: endpoint.json breaks C1),
    // naming the member; FIELD_INVALID stays for the caller's own arguments.
    let good = "45cb5ecaca86140ab2c4a017c9c2985089db171e6f75e09d75f762975d6d6279";
    for pin in [
        good.to_uppercase(),
        good[..63].to_owned(),
        format!("{good}0"),
        String::new(),
    ] {
        let text = format!(
            r#"{{"endpoint": "https://127.0.0.1:50051", "instance_id": "inst_vector", "pid": 4242, "api_version": "v1alpha1", "certificate_sha256": "{pin}"}}"#
        );
        let err = parse_descriptor(text.as_bytes()).unwrap_err();
        assert!(err.is(Kind::Descriptor), "{pin}");
        assert_eq!(err.reason(), Some(reasons::DESCRIPTOR_INVALID), "{pin}");
        assert_eq!(err.metadata()["field"], "certificate_sha256");
    }
    let ok = format!(
        r#"{{"endpoint": "https://127.0.0.1:50051", "instance_id": "inst_vector", "pid": 4242, "api_version": "v1alpha1", "certificate_sha256": "{good}"}}"#
    );
    assert_eq!(
        parse_descriptor(ok.as_bytes()).unwrap().certificate_sha256,
        good
    );
}
