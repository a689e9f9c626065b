//! B9, B17. The plugin under Tauri's mock runtime (headless): per-window capabilities from the
//! plugin's own permission files, remote-origin refusal, the ordered channel, and the
//! inventory of commands, handlers and permissions (B9).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use colossus_desktop_bridge::{Bridge, TargetId, TargetManager, WatchFrame};
use colossus_sdk::Client;
use colossus_sdk::embedded::EmbeddedRuntime;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, CapabilityBuilder, Channel, InvokeBody, RuntimeAuthority};
use tauri::test::{
    INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets,
};
use tauri::utils::acl::resolved::Resolved;
use tauri::webview::InvokeRequest;
use tauri::{App, Manager, WebviewWindow, WebviewWindowBuilder};
use tauri_utils::acl::manifest::{Manifest, PermissionFile};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn permission_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            permission_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

/// The ACL manifest a generated context would hold for this plugin, from its committed
/// permission files.
fn manifest() -> BTreeMap<String, Manifest> {
    let mut paths = Vec::new();
    permission_files(&Path::new(ROOT).join("permissions"), &mut paths);
    let files: Vec<PermissionFile> = paths
        .iter()
        .map(|p| toml::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    BTreeMap::from([("colossus".to_owned(), Manifest::new(files, None))])
}

struct Fixture {
    app: App<MockRuntime>,
    target: TargetId,
    bridge: Bridge,
}

/// An app with the plugin over one selected Embedded target, and one window per
/// `(label, permissions, remote origin)`.
fn fixture(windows: &[(&str, &[&str], Option<&str>)]) -> Fixture {
    let manager = TargetManager::new();
    let target = tauri::async_runtime::block_on(async {
        let t = manager
            .add_embedded("On this device", Client::embedded(EmbeddedRuntime::new()))
            .await;
        manager.select(&t).await.unwrap();
        t
    });
    let mut context = mock_context(noop_assets());
    *context.runtime_authority_mut() = RuntimeAuthority::new(manifest(), Resolved::default());
    let bridge = Bridge::new(manager);
    let app = mock_builder()
        .plugin(tauri_plugin_colossus::init(bridge.clone()))
        .build(context)
        .unwrap();
    for (label, permissions, remote) in windows {
        if !permissions.is_empty() {
            let mut capability = CapabilityBuilder::new(format!("cap-{label}")).window(*label);
            for p in *permissions {
                capability = capability.permission(*p);
            }
            if let Some(url) = remote {
                capability = capability.remote((*url).to_owned());
            }
            app.add_capability(capability).unwrap();
        }
        WebviewWindowBuilder::new(&app, *label, Default::default())
            .build()
            .unwrap();
    }
    Fixture {
        app,
        target,
        bridge,
    }
}

fn invoke_from(
    window: &WebviewWindow<MockRuntime>,
    url: &str,
    cmd: &str,
    body: Value,
) -> Result<Value, Value> {
    get_ipc_response(
        window,
        InvokeRequest {
            cmd: format!("plugin:colossus|{cmd}"),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: url.parse().unwrap(),
            body: InvokeBody::Json(body),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|b| b.deserialize::<Value>().unwrap())
}

const LOCAL: &str = "tauri://localhost";

fn invoke(f: &Fixture, label: &str, cmd: &str, body: Value) -> Result<Value, Value> {
    let window = f.app.get_webview_window(label).unwrap();
    invoke_from(&window, LOCAL, cmd, body)
}

fn create_body(f: &Fixture) -> Value {
    json!({"input": {"target_id": f.target.as_str(), "text": "hello", "mode": {"kind": "execute"}}})
}

fn refused_by_acl(result: &Result<Value, Value>) -> bool {
    matches!(result, Err(Value::String(text)) if text.contains("not allowed") || text.contains("denied"))
}

#[test]
fn a_window_without_a_capability_runs_no_command() {
    let f = fixture(&[("bare", &[], None)]);
    for cmd in tauri_plugin_colossus::COMMANDS {
        let r = invoke(&f, "bare", cmd, json!({}));
        assert!(refused_by_acl(&r), "{cmd}: {r:?}");
    }
}

#[test]
fn the_default_set_grants_only_the_release_channel() {
    let f = fixture(&[("main", &["colossus:default"], None)]);
    assert_eq!(
        invoke(&f, "main", "desktop_release_channel", json!({})),
        Ok(json!("development"))
    );
    for cmd in tauri_plugin_colossus::COMMANDS
        .iter()
        .filter(|c| **c != "desktop_release_channel")
    {
        let r = invoke(&f, "main", cmd, json!({}));
        assert!(refused_by_acl(&r), "{cmd}: {r:?}");
    }
}

#[test]
fn a_fleet_window_sees_target_health_but_cannot_create_runs() {
    let f = fixture(&[
        ("fleet", &["colossus:fleet"], None),
        ("work", &["colossus:work"], None),
    ]);
    let targets = invoke(&f, "fleet", "list_targets", json!({})).unwrap();
    assert_eq!(targets[0]["target_id"], f.target.as_str());
    assert!(refused_by_acl(&invoke(
        &f,
        "fleet",
        "create_run",
        create_body(&f)
    )));
    assert!(refused_by_acl(&invoke(
        &f,
        "fleet",
        "cancel_run",
        json!({})
    )));
    let run = invoke(&f, "work", "create_run", create_body(&f)).unwrap();
    assert_eq!(run["target_id"], f.target.as_str());
    assert_eq!(
        run["last_sequence"]
            .as_str()
            .map(|s| s.parse::<u64>().is_ok()),
        Some(true)
    );
}

#[test]
fn a_remote_origin_is_refused_even_in_a_work_window() {
    let f = fixture(&[("work", &["colossus:work"], None)]);
    let window = f.app.get_webview_window("work").unwrap();
    for url in ["https://evil.example", "http://127.0.0.1:8080"] {
        let r = invoke_from(&window, url, "list_targets", json!({}));
        assert!(refused_by_acl(&r), "{url}: {r:?}");
        let r = invoke_from(&window, url, "create_run", create_body(&f));
        assert!(refused_by_acl(&r), "{url}: {r:?}");
    }
    assert!(invoke_from(&window, LOCAL, "list_targets", json!({})).is_ok());
}

#[test]
fn closed_inputs_are_refused_before_the_bridge() {
    let f = fixture(&[("work", &["colossus:work"], None)]);
    let mut body = create_body(&f);
    body["input"]["idempotency_key"] = json!("mine");
    let r = invoke(&f, "work", "create_run", body);
    assert!(r.is_err() && !refused_by_acl(&r), "{r:?}");
    // A bridge refusal crosses as data.
    let r = invoke(
        &f,
        "work",
        "get_run",
        json!({"input": {"target_id": f.target.as_str(), "run_id": "run_nope"}}),
    );
    assert_eq!(r.unwrap_err()["kind"], "run_not_bound");
}

#[test]
fn the_channel_delivers_frames_in_sequence_order_until_the_end() {
    let f = fixture(&[("work", &["colossus:work"], None)]);
    let mut script = String::from("colossus-script v1\n");
    for i in 0..50 {
        script.push_str(&format!("say part{i};\n"));
        if i % 10 == 0 {
            script.push_str("tool filesystem.read\n");
        }
    }
    let body = json!({"input": {"target_id": f.target.as_str(), "text": script, "mode": {"kind": "execute"}}});
    let run = invoke(&f, "work", "create_run", body).unwrap();
    let run_id = run["run_id"].as_str().unwrap().to_owned();

    // The command accepts a channel from the IPC layer and starts a watch task.
    let r = invoke(
        &f,
        "work",
        "watch_run",
        json!({"input": {"target_id": f.target.as_str(), "run_id": run_id}, "onFrame": "__CHANNEL__:7"}),
    );
    assert_eq!(r, Ok(Value::Null));

    // What the task sends, through a Rust-side channel.
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let channel: Channel<WatchFrame> = Channel::new(move |body| {
        tx.send(body.deserialize::<Value>().unwrap()).unwrap();
        Ok(())
    });
    let frames: Vec<Value> = tauri::async_runtime::block_on(async {
        let watch = f
            .bridge
            .watch_run(
                serde_json::from_value(json!({"target_id": f.target.as_str(), "run_id": run_id}))
                    .unwrap(),
            )
            .await
            .unwrap();
        tauri_plugin_colossus::forward(watch, channel).await;
        rx.try_iter().collect()
    });
    let mut last = 0u64;
    for frame in &frames {
        let seq = match frame["frame"].as_str().unwrap() {
            "text" => frame["last_sequence"].as_str(),
            "event" => frame["sequence"].as_str(),
            _ => None,
        };
        if let Some(seq) = seq {
            let seq: u64 = seq.parse().unwrap();
            assert!(seq > last, "{frames:?}");
            last = seq;
        }
    }
    assert_eq!(frames.last().unwrap()["frame"], "end");
    assert_eq!(frames.last().unwrap()["reason"], "completed");
    let text: String = frames
        .iter()
        .filter(|f| f["frame"] == "text")
        .map(|f| f["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        text,
        (0..50).map(|i| format!("part{i};")).collect::<String>()
    );
    assert!(
        frames
            .iter()
            .any(|f| f["frame"] == "event" && f["event"]["type"] == "tool_activity")
    );
}

#[test]
fn watch_tasks_end_when_their_window_goes_away() {
    let f = fixture(&[("work", &["colossus:work"], None)]);
    let body = json!({"input": {"target_id": f.target.as_str(), "text": "colossus-script v1\nsleep forever\n", "mode": {"kind": "execute"}}});
    let run = invoke(&f, "work", "create_run", body).unwrap();
    let watch = json!({"input": {"target_id": f.target.as_str(), "run_id": run["run_id"]}, "onFrame": "__CHANNEL__:9"});
    assert_eq!(invoke(&f, "work", "watch_run", watch), Ok(Value::Null));
    let handle = f.app.handle().clone();
    assert_eq!(tauri_plugin_colossus::active_watches(&handle, "work"), 1);
    // The mock runtime drops a destroyed window without the WindowEvent::Destroyed the real
    // event loop sends (the plugin's on_event calls end_watches on it), so the handler is
    // called here as that event would.
    f.app.get_webview_window("work").unwrap().destroy().unwrap();
    tauri_plugin_colossus::end_watches(&handle, "work");
    for _ in 0..100 {
        if tauri_plugin_colossus::active_watches(&handle, "work") == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the watch task outlived its window");
}

// B9: the command list, the handler list and the permission list are the same product list.
#[test]
fn commands_handlers_and_permissions_are_the_same_product_list() {
    let products: Vec<&str> = colossus_desktop_bridge::PRODUCT_OPERATIONS.to_vec();
    assert_eq!(tauri_plugin_colossus::COMMANDS.to_vec(), products);

    let build = std::fs::read_to_string(Path::new(ROOT).join("build.rs")).unwrap();
    let listed: Vec<&str> = build
        .split("const COMMANDS: &[&str] = &[")
        .nth(1)
        .unwrap()
        .split("];")
        .next()
        .unwrap()
        .split('"')
        .skip(1)
        .step_by(2)
        .collect();
    assert_eq!(listed, products, "build.rs");

    let mut generated: Vec<String> =
        std::fs::read_dir(Path::new(ROOT).join("permissions/autogenerated/commands"))
            .unwrap()
            .map(|e| {
                e.unwrap()
                    .path()
                    .file_stem()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
    generated.sort();
    let mut expected: Vec<String> = products.iter().map(|s| (*s).to_owned()).collect();
    expected.sort();
    assert_eq!(generated, expected, "generated permission files");

    let manifest = manifest().remove("colossus").unwrap();
    let work = &manifest.permission_sets["work"].permissions;
    let mut work: Vec<String> = work
        .iter()
        .map(|p| p.trim_start_matches("allow-").replace('-', "_"))
        .collect();
    work.sort();
    assert_eq!(work, expected, "the work set");
    assert_eq!(
        manifest.default_permission.unwrap().permissions,
        vec!["allow-desktop-release-channel".to_owned()]
    );

    // Every command has a handler: in a work window none is unknown to the plugin.
    let f = fixture(&[("work", &["colossus:work"], None)]);
    for cmd in products {
        if let Err(Value::String(text)) = invoke(&f, "work", cmd, json!({})) {
            assert!(!text.contains("not found"), "{cmd}: {text}");
            assert!(
                !refused_by_acl(&Err(Value::String(text.clone()))),
                "{cmd}: {text}"
            );
        }
    }
    // And nothing else is: an unlisted command is refused.
    assert!(invoke(&f, "work", "invoke_sdk", json!({})).is_err());
}
