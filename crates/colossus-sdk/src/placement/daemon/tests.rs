//! `Client::connect` end to end against in-process TLS listeners: the discovery files are
//! checked against the provisioned identity before any connection, and a worker replaced
//! by a hostile listener on the same port is refused on the reconnect with a typed error,
//! the bearer sent to it never (the proof behind the README's "no residual TLS risk").

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::DaemonOptions;
use crate::options::{ClientOptions, RetryPolicy};
use crate::proto as p;
use crate::testing::credentials::Counting;
use crate::testing::fake_worker::{Behaviour, INSTANCE, listen, listen_with, server_info};
use crate::testing::tls::{Leaf, leaf};
use crate::trust::pin::Pin;
use crate::{Client, Kind, reasons};

struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A discovery folder as the worker writes it.
fn discovery(tag: &str, port: u16, leaf: &Leaf, pin: &str) -> Folder {
    let dir = std::env::temp_dir().join(format!("colossus-daemon-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let descriptor = serde_json::json!({
        "endpoint": format!("https://127.0.0.1:{port}"),
        "instance_id": INSTANCE,
        "pid": 4242,
        "api_version": "v1alpha1",
        "certificate_sha256": pin,
    });
    write_private(&dir.join("endpoint.json"), &descriptor.to_string());
    write_private(&dir.join("certificate.pem"), &leaf.pem);
    Folder(dir)
}

fn options(dir: &Path, pin: &str, provider: Counting) -> DaemonOptions {
    DaemonOptions::builder()
        .public_api_dir(dir)
        .expected_instance_id(INSTANCE)
        .expected_certificate_sha256(pin)
        .credentials(provider)
        .client_options(
            ClientOptions::builder()
                .connect_timeout(Duration::from_secs(5))
                .retry(RetryPolicy::none())
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_restart_into_a_hostile_listener_fails_typed_and_gets_no_bearer() {
    let genuine = leaf();
    let pin = Pin::of_der(&genuine.der).to_hex();
    for behaviour in [
        Behaviour::Tls12Only,
        Behaviour::ForeignLeaf,
        Behaviour::Chain,
    ] {
        let worker = listen("127.0.0.1:0".parse().unwrap(), &genuine, Behaviour::Genuine).await;
        let addr = worker.addr;
        let folder = discovery(&format!("{behaviour:?}"), addr.port(), &genuine, &pin);
        let provider = Counting::default();
        let client = Client::connect(options(&folder.0, &pin, provider.clone()))
            .await
            .unwrap();
        assert_eq!(client.server_info().await.unwrap().instance_id, INSTANCE);
        client.runs().get("r1").await.unwrap();

        drop(worker);
        let hostile = listen(addr, &genuine, behaviour).await;
        let mut refusal = None;
        for _ in 0..20 {
            match client.runs().get("r1").await {
                Err(e) if e.is(Kind::Trust) => {
                    refusal = Some(e);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                Ok(_) => panic!("{behaviour:?}: a call succeeded on the hostile listener"),
            }
        }
        let err = refusal.unwrap_or_else(|| panic!("{behaviour:?}: no trust refusal"));
        let want = match behaviour {
            Behaviour::Tls12Only => (Kind::TlsPolicy, reasons::TLS_VERSION),
            Behaviour::ForeignLeaf => (Kind::PinMismatch, reasons::PIN_MISMATCH),
            _ => (Kind::TlsPolicy, reasons::TLS_CHAIN),
        };
        assert_eq!(
            (err.kind(), err.reason()),
            (want.0, Some(want.1)),
            "{behaviour:?}: {err}"
        );
        assert_eq!(err.code(), None, "a local refusal carries no status code");
        assert!(
            hostile.requests().is_empty(),
            "{behaviour:?}: the hostile listener saw a request"
        );
        assert_eq!(provider.0.load(Ordering::SeqCst), 1);
        client.close();
    }
}

#[tokio::test]
async fn discovery_files_that_disagree_with_the_provisioned_identity_stop_connect() {
    let genuine = leaf();
    let pin = Pin::of_der(&genuine.der).to_hex();
    let worker = listen("127.0.0.1:0".parse().unwrap(), &genuine, Behaviour::Genuine).await;
    let other_pin = Pin::of_der(b"another certificate").to_hex();
    let cases = [
        // The descriptor names another certificate than the provisioned pin.
        (
            "descriptor-pin",
            discovery("descriptor-pin", worker.addr.port(), &genuine, &other_pin),
            pin.clone(),
            reasons::PIN_MISMATCH,
        ),
        // Provisioned pin differs from what the (consistent) files say.
        (
            "provisioned-pin",
            discovery("provisioned-pin", worker.addr.port(), &genuine, &pin),
            other_pin.clone(),
            reasons::PIN_MISMATCH,
        ),
    ];
    for (name, folder, expected_pin, reason) in cases {
        let provider = Counting::default();
        let err = Client::connect(options(&folder.0, &expected_pin, provider.clone()))
            .await
            .unwrap_err();
        assert_eq!(err.reason(), Some(reason), "{name}: {err}");
        assert!(err.is(Kind::Trust));
        assert_eq!(provider.0.load(Ordering::SeqCst), 0, "{name}");
    }
    // A folder open to others is refused before anything is read.
    let folder = discovery("open", worker.addr.port(), &genuine, &pin);
    std::fs::set_permissions(&folder.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = Client::connect(options(&folder.0, &pin, Counting::default()))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(reasons::DESCRIPTOR_INVALID));
    assert!(worker.requests().is_empty(), "no connection was made");
}

#[test]
fn the_builder_names_a_missing_or_malformed_field() {
    let err = DaemonOptions::builder()
        .public_api_dir("/tmp/x")
        .expected_instance_id("inst")
        .expected_certificate_sha256("AB".repeat(32))
        .credentials(Counting::default())
        .build()
        .unwrap_err();
    assert_eq!(err.metadata()["field"], "expected_certificate_sha256");
    let err = DaemonOptions::builder().build().unwrap_err();
    assert_eq!(err.metadata()["field"], "public_api_dir");
}

#[tokio::test]
async fn the_request_cap_is_inclusive_to_the_byte() {
    let genuine = leaf();
    let pin = Pin::of_der(&genuine.der).to_hex();
    // GetRunRequest with a 64-character run ID encodes to 1 + 1 + 64 = 66 bytes.
    let run_id = format!("run_{}", "a".repeat(60));
    for (cap, sent) in [(66, true), (65, false)] {
        let mut info = server_info();
        info.limits = Some(p::Limits {
            max_request_bytes: cap,
            ..Default::default()
        });
        let worker = listen_with(
            "127.0.0.1:0".parse().unwrap(),
            &genuine,
            Behaviour::Genuine,
            info,
        )
        .await;
        let folder = discovery(&format!("cap{cap}"), worker.addr.port(), &genuine, &pin);
        let client = Client::connect(options(&folder.0, &pin, Counting::default()))
            .await
            .unwrap();
        let result = client.runs().get(&run_id).await;
        let gets = worker
            .requests()
            .iter()
            .filter(|(m, _)| m == "GetRun")
            .count();
        if sent {
            assert!(result.is_ok(), "cap {cap}: {result:?}");
            assert_eq!(gets, 1);
        } else {
            let err = result.unwrap_err();
            assert_eq!(
                err.reason(),
                Some(reasons::REQUEST_TOO_LARGE),
                "cap {cap}: {err}"
            );
            assert_eq!(err.code(), None);
            assert_eq!(gets, 0, "an over-cap request left the client");
        }
    }
}
