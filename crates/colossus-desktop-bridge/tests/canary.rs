//! The canary test (B6, B8): a full session plants a distinct canary in every native-only
//! value the bridge handles, serializes everything that would cross into a WebView (every
//! DTO type, every watch frame, every error, the target list and the release channel) and
//! finds none of them. It also pins the set of JSON keys that may cross, so a field added
//! to a DTO fails here until it is reviewed.
//!
//! Placements: Embedded always; Managed Local against the reference worker
//! (`$COLOSSUS_REFERENCE_WORKER` or `colossus-reference-worker` on PATH; required when
//! `COLOSSUS_REQUIRE_WORKER=1`, as the nox session sets it); External up to the native
//! confirmation and the SDK's own refusal (no daemon here, the trust checks refuse first).
//!
//! Not planted, because nothing in the public API or this bridge can carry them: provider
//! keys (never given to the SDK), hidden reasoning and quarantined output (no field of
//! `colossus.api.v1alpha1` holds them). The key allow-list below is what keeps them out.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use colossus_desktop_bridge::{
    Bridge, BridgeError, ErrorKind, ExternalConfirmation, ExternalTarget, ManagerOptions, TargetId,
    TargetManager, WatchFrame,
};
use colossus_sdk::credentials::InMemoryCredentialProvider;
use colossus_sdk::embedded::EmbeddedRuntime;
use colossus_sdk::model::{CreateRunRequest, InteractionKind};
use colossus_sdk::placement::SidecarOptions;
use colossus_sdk::{Bearer, Client, Error, Kind};
use serde::Serialize;
use serde_json::{Value, json};
use support::*;

const BEARER: &str = "cb1_CANARYbearerCANARYbearerCANARYbearer1234";
const PIN: &str = "cafecafecafecafecafecafecafecafecafecafecafecafecafecafecafe0001";
const DESCRIPTOR_DIR: &str = "/tmp/canary-descriptor-dir-9d41/public-api";
const STATE_DIR_NAME: &str = "canary-state-dir-5be2";
const INSTANCE: &str = "inst_canary_instance_77";
const ROLE: &str = "canary_role_31";
const TOOL_NAMES: [&str; 4] = [
    "filesystem.read",
    "filesystem.write",
    "git.status",
    "web.fetch",
];
const FAILURE_MESSAGE: &str = "canary-failure-message-from-worker";
const SDK_MESSAGE: &str = "canary-sdk-message";
const METADATA: &str = "canary-metadata-value";
const SOURCE: &str = "canary-source-chain";
const IDEMPOTENCY: &str = "canary-idempotency-key";

/// Everything that crossed, serialized as the IPC layer would.
#[derive(Default)]
struct Crossed {
    texts: Vec<String>,
    keys: BTreeSet<String>,
    error_kinds: BTreeSet<String>,
}

impl Crossed {
    fn add(&mut self, value: &impl Serialize) {
        let json = serde_json::to_value(value).unwrap();
        collect_keys(&json, &mut self.keys);
        self.texts.push(json.to_string());
    }

    fn error(&mut self, error: &BridgeError) {
        self.error_kinds
            .insert(serde_json::to_string(&error.kind).unwrap());
        self.add(error);
        self.texts.push(error.to_string());
    }

    fn result<T: Serialize>(&mut self, result: &Result<T, BridgeError>) {
        match result {
            Ok(v) => self.add(v),
            Err(e) => self.error(e),
        }
    }

    fn assert_clean(&self, canaries: &[String]) {
        let all = self.texts.join("\n");
        for canary in canaries {
            assert!(
                !all.contains(canary.as_str()),
                "canary {canary:?} crossed:\n{all}"
            );
        }
        // Shapes that would be secrets whatever their value.
        for shape in [
            "cb1_",
            "BEGIN CERTIFICATE",
            "bnd_",
            "/tmp/",
            "/home/",
            "rs-",
        ] {
            assert!(!all.contains(shape), "{shape:?} crossed:\n{all}");
        }
        assert!(
            !has_hex_run(&all, 64),
            "a 64-hex value (a pin) crossed:\n{all}"
        );
    }
}

fn collect_keys(value: &Value, keys: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                keys.insert(k.clone());
                collect_keys(v, keys);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, keys)),
        _ => {}
    }
}

fn has_hex_run(text: &str, n: usize) -> bool {
    let mut run = 0;
    for b in text.bytes() {
        run = if b.is_ascii_hexdigit() { run + 1 } else { 0 };
        if run >= n {
            return true;
        }
    }
    false
}

/// Every key any DTO, frame or error may carry.
const ALLOWED_KEYS: &[&str] = &[
    // TargetDto
    "target_id",
    "kind",
    "label",
    "health",
    "state",
    "reason",
    "selected",
    // RunDto
    "run_id",
    "session_id",
    "mode",
    "status",
    "last_sequence",
    "create_time_ms",
    "update_time_ms",
    "max_turns",
    "pending_interaction",
    "result",
    // InteractionDto
    "interaction_id",
    "request",
    "question",
    "choices",
    "action_class",
    "display_category",
    "origin",
    // RunResultDto, PlanDto, ResearchDto, CitationDto
    "output_text",
    "plan",
    "research",
    "failure_code",
    "plan_id",
    "revision",
    "report",
    "citations",
    "lane",
    "url",
    // RunPageDto
    "runs",
    "next_page_token",
    // frames and events
    "frame",
    "first_sequence",
    "text",
    "sequence",
    "event",
    "type",
    "previous",
    "interaction",
    "outcome",
    "activity_id",
    "phase",
    "error",
    // BridgeError
    "retryable",
    "retry_after_ms",
    "field",
];

async fn settle(bridge: &Bridge, target: &TargetId, run_id: &str, crossed: &mut Crossed) {
    for _ in 0..1000 {
        let run = bridge.get_run(run_ref(target, run_id)).await;
        crossed.result(&run);
        let run = run.unwrap();
        if run.pending_interaction.is_some() || run.result.is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {run_id} never settled");
}

/// Drives one placement through every operation and every interaction kind; returns the
/// native-only values it saw (idempotency keys, approval bindings).
async fn session(
    bridge: &Bridge,
    target: &TargetId,
    client: Option<&Client>,
    crossed: &mut Crossed,
) -> Vec<String> {
    let mut native = Vec::new();
    crossed.add(&bridge.list_targets());
    crossed.add(&bridge.desktop_release_channel());

    let full = script(&[
        "say hello",
        "tool filesystem.read",
        "tool git.status fail",
        "approve filesystem.write",
        "approve web.fetch https://example.org",
        "ask Proceed? | yes | no",
        "say done",
    ]);
    let run = bridge
        .create_run(create(target, &full, json!({"kind": "execute"})))
        .await;
    crossed.result(&run);
    let run = run.unwrap();
    let mut answered = BTreeSet::new();
    for _ in 0..500 {
        settle(bridge, target, &run.run_id, crossed).await;
        let now = bridge.get_run(run_ref(target, &run.run_id)).await.unwrap();
        let Some(pending) = now.pending_interaction else {
            break;
        };
        if !answered.insert(pending.interaction_id.clone()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        if let Some(client) = client {
            let native_run = client.runs().get(&run.run_id).await.unwrap();
            native.push(native_run.idempotency_key.clone());
            if let Some(InteractionKind::Approval(a)) =
                native_run.pending_interaction.map(|i| i.kind)
            {
                native.push(a.binding);
            }
        }
        let answer = match pending.request {
            colossus_desktop_bridge::dto::InteractionRequestDto::Prompt { .. } => {
                choose(target, &run.run_id, &pending.interaction_id, "yes")
            }
            _ => approve(target, &run.run_id, &pending.interaction_id, "approve"),
        };
        let r = bridge.respond_interaction(answer).await;
        crossed.result(&r);
        r.expect("the answer is accepted");
    }
    crossed.add(&frames(bridge, watch(target, &run.run_id)).await);

    let failing = bridge
        .create_run(create(
            target,
            &script(&[&format!("fail canary_code {FAILURE_MESSAGE}")]),
            json!({"kind": "execute"}),
        ))
        .await
        .unwrap();
    settle(bridge, target, &failing.run_id, crossed).await;
    crossed.add(&frames(bridge, watch(target, &failing.run_id)).await);

    let slow = bridge
        .create_run(create(
            target,
            &script(&["say waiting", "sleep forever"]),
            json!({"kind": "execute"}),
        ))
        .await
        .unwrap();
    let mut open = bridge.watch_run(watch(target, &slow.run_id)).await.unwrap();
    crossed.add(&open.next_frame().await);
    crossed.result(&bridge.cancel_run(run_ref(target, &slow.run_id)).await);
    while let Some(frame) = open.next_frame().await {
        crossed.add(&frame);
    }

    let plan = bridge
        .create_run(create(target, "Plan the release", json!({"kind": "plan"})))
        .await;
    crossed.result(&plan);
    if let Ok(plan) = plan {
        settle(bridge, target, &plan.run_id, crossed).await;
        crossed.add(&frames(bridge, watch(target, &plan.run_id)).await);
        let revision = bridge
            .get_run(run_ref(target, &plan.run_id))
            .await
            .unwrap()
            .result
            .and_then(|r| r.plan)
            .map(|p| p.revision);
        if let Some(revision) = revision {
            let action = bridge
                .create_run(create(target, "Go", json!({"kind": "plan_action",
                    "source_run_id": plan.run_id, "revision": revision, "action": "execute_direct"})))
                .await;
            crossed.result(&action);
        }
    }
    let research = bridge
        .create_run(create(
            target,
            "What changed?",
            json!({"kind": "research", "depth": 1, "lanes": ["repository", "web"]}),
        ))
        .await;
    crossed.result(&research);
    if let Ok(research) = research {
        settle(bridge, target, &research.run_id, crossed).await;
        crossed.add(&frames(bridge, watch(target, &research.run_id)).await);
    }
    let mut page = bridge.list_runs(list(target)).await;
    crossed.result(&page);
    while let Ok(p) = &page {
        let Some(token) = p.next_page_token.clone() else {
            break;
        };
        page = bridge
            .list_runs(from(
                json!({"target_id": target.as_str(), "page_token": token}),
            ))
            .await;
        crossed.result(&page);
    }
    if let Some(client) = client {
        for run in [&failing.run_id, &slow.run_id] {
            native.push(client.runs().get(run).await.unwrap().idempotency_key);
        }
    }

    // Refusals the renderer can provoke.
    crossed.result(&bridge.get_run(run_ref(target, "run_never_made")).await);
    crossed.result(
        &bridge
            .create_run(create(target, " ", json!({"kind": "execute"})))
            .await,
    );
    crossed.result(
        &bridge
            .respond_interaction(approve(target, &run.run_id, "int_gone", "deny"))
            .await,
    );
    crossed.result(&bridge.cancel_run(run_ref(target, &run.run_id)).await);
    native
}

fn base_canaries() -> Vec<String> {
    let mut c: Vec<String> = [
        BEARER,
        PIN,
        DESCRIPTOR_DIR,
        "canary-descriptor-dir",
        STATE_DIR_NAME,
        INSTANCE,
        ROLE,
        FAILURE_MESSAGE,
        SDK_MESSAGE,
        METADATA,
        SOURCE,
        IDEMPOTENCY,
        "runs:execute",
        "runs:read",
        "runs:control",
        "prompts:respond",
        "approvals:respond",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    c.extend(TOOL_NAMES.iter().map(|s| (*s).to_owned()));
    c
}

#[tokio::test]
async fn nothing_secret_crosses_from_an_embedded_session() {
    let mut crossed = Crossed::default();
    let client = Client::embedded(EmbeddedRuntime::new());
    let manager = TargetManager::with_options(
        ManagerOptions::default()
            .watches_per_target(2)
            .confirm_external(|_: ExternalConfirmation<'_>| false),
    );
    let target = manager.add_embedded("On this device", client.clone()).await;
    // A second target without plans.continue: a capability refusal.
    let bare = Client::embedded(
        EmbeddedRuntime::builder()
            .capabilities::<[&str; 0], &str>([])
            .build(),
    );
    let other = manager.add_embedded("Bare", bare).await;
    manager.select(&target).await.unwrap();
    let bridge = Bridge::new(manager.clone());
    let mut native = session(&bridge, &target, Some(&client), &mut crossed).await;

    // Errors of the bridge's own kinds, provoked through the operations.
    let external = ExternalTarget::new(
        "Saved daemon",
        DESCRIPTOR_DIR,
        INSTANCE,
        PIN,
        InMemoryCredentialProvider::new(Bearer::new(BEARER.to_owned()).unwrap()),
    );
    crossed.result(
        &manager
            .add_external(external.clone())
            .await
            .map(|id| id.to_string()),
    );
    let accepting = TargetManager::with_options(
        ManagerOptions::default().confirm_external(|_: ExternalConfirmation<'_>| true),
    );
    crossed.result(
        &accepting
            .add_external(external)
            .await
            .map(|id| id.to_string()),
    );
    crossed.result(&bridge.get_run(run_ref(&other, "run_x")).await);
    crossed.result(
        &bridge
            .create_run(from(json!({"target_id": "tgt_ffffffffffffffffffffffffffffffff", "text": "x", "mode": {"kind": "execute"}})))
            .await,
    );
    let sleeper = bridge
        .create_run(create(
            &target,
            &script(&["sleep forever"]),
            json!({"kind": "execute"}),
        ))
        .await
        .unwrap();
    let w1 = bridge
        .watch_run(watch(&target, &sleeper.run_id))
        .await
        .unwrap();
    let w2 = bridge
        .watch_run(watch(&target, &sleeper.run_id))
        .await
        .unwrap();
    crossed.result(
        &bridge
            .watch_run(watch(&target, &sleeper.run_id))
            .await
            .map(|_| ()),
    );
    drop((w1, w2));
    bridge
        .cancel_run(run_ref(&target, &sleeper.run_id))
        .await
        .unwrap();
    manager.select(&other).await.unwrap();
    let plan = bridge
        .create_run(create(&other, "p", json!({"kind": "plan"})))
        .await
        .unwrap();
    settle(&bridge, &other, &plan.run_id, &mut crossed).await;
    crossed.result(
        &bridge
            .create_run(create(
                &other,
                "Go",
                json!({"kind": "plan_action",
                "source_run_id": plan.run_id, "revision": "1", "action": "revise"}),
            ))
            .await,
    );

    // Every SDK error kind, carrying canaries in its message, metadata, idempotency key
    // and source chain.
    for kind in all_sdk_kinds() {
        let error = Error::local(kind, "canary-reason", SDK_MESSAGE)
            .with_metadata("path", METADATA)
            .with_idempotency_key(IDEMPOTENCY)
            .with_source(std::io::Error::other(SOURCE));
        crossed.error(&BridgeError::from(error));
    }
    // A closed client: a real SDK refusal.
    client.close();
    manager.select(&target).await.unwrap();
    crossed.result(&bridge.get_run(run_ref(&target, &sleeper.run_id)).await);
    crossed.add(&bridge.list_targets());

    // The native request's own idempotency key, for a run created natively.
    let request = CreateRunRequest::text("native");
    native.push(request.idempotency_key().to_owned());

    let mut canaries = base_canaries();
    canaries.extend(native.into_iter().filter(|s| !s.is_empty()));
    crossed.assert_clean(&canaries);

    let stray: Vec<&String> = crossed
        .keys
        .iter()
        .filter(|k| !ALLOWED_KEYS.contains(&k.as_str()))
        .collect();
    assert!(
        stray.is_empty(),
        "keys outside the reviewed list crossed: {stray:?}"
    );
    for kind in [
        ErrorKind::InvalidInput,
        ErrorKind::UnknownTarget,
        ErrorKind::NotSelected,
        ErrorKind::RunNotBound,
        ErrorKind::WatchLimit,
        ErrorKind::Declined,
        ErrorKind::Unsupported,
        ErrorKind::Trust,
        ErrorKind::Closed,
        ErrorKind::FailedPrecondition,
        ErrorKind::Authentication,
        ErrorKind::PermissionDenied,
        ErrorKind::NotFound,
        ErrorKind::InvalidArgument,
        ErrorKind::ResourceExhausted,
        ErrorKind::Unavailable,
        ErrorKind::DeadlineExceeded,
        ErrorKind::OutcomeUnknown,
        ErrorKind::Internal,
    ] {
        let name = serde_json::to_string(&kind).unwrap();
        assert!(
            crossed.error_kinds.contains(&name),
            "no {name} error was produced: {:?}",
            crossed.error_kinds
        );
    }
    assert!(
        crossed
            .texts
            .iter()
            .any(|t| t.contains("\"frame\":\"text\""))
    );
    assert!(crossed.texts.iter().any(|t| t.contains("tool_activity")));
}

fn all_sdk_kinds() -> Vec<Kind> {
    vec![
        Kind::Trust,
        Kind::Descriptor,
        Kind::Certificate,
        Kind::PinMismatch,
        Kind::TlsPolicy,
        Kind::IncompatibleServer,
        Kind::Credential,
        Kind::Api,
        Kind::Authentication,
        Kind::PermissionDenied,
        Kind::NotFound,
        Kind::InvalidArgument,
        Kind::IdempotencyConflict,
        Kind::FailedPrecondition,
        Kind::CapabilityMissing,
        Kind::ResourceExhausted,
        Kind::DataLoss,
        Kind::Internal,
        Kind::Transport,
        Kind::DeadlineExceeded,
        Kind::WatchIdleTimeout,
        Kind::OutcomeUnknown,
        Kind::ProtocolViolation,
        Kind::WatchGap,
        Kind::ArtifactIntegrity,
        Kind::Sidecar,
        Kind::ClientClosed,
    ]
}

fn reference_worker() -> Option<PathBuf> {
    let found = std::env::var_os("COLOSSUS_REFERENCE_WORKER")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("colossus-reference-worker"))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        assert!(
            std::env::var("COLOSSUS_REQUIRE_WORKER").as_deref() != Ok("1"),
            "COLOSSUS_REQUIRE_WORKER=1 but no reference worker was found"
        );
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SKIPPED the Managed Local canary session: no reference worker\n",
        );
    }
    found
}

#[tokio::test]
async fn nothing_secret_crosses_from_a_managed_local_session() {
    let Some(worker) = reference_worker() else {
        return;
    };
    let parent = std::env::temp_dir().join(format!("bridge-canary-{}", std::process::id()));
    let state = parent.join(STATE_DIR_NAME);
    std::fs::create_dir_all(&state).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let worker = std::fs::canonicalize(worker).unwrap();
    let unbound = SidecarOptions::builder(&worker, "canary-app")
        .state_dir(&state)
        .build()
        .unwrap();
    let refused = TargetManager::new()
        .add_managed_local("x", unbound)
        .await
        .unwrap_err();
    assert_eq!(refused.reason.as_deref(), Some("executable_not_bound"));
    let digest: String = {
        use sha2::Digest;
        sha2::Sha256::digest(std::fs::read(&worker).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let options = SidecarOptions::builder(&worker, "canary-app")
        .executable_sha256(digest)
        .scopes([
            "runs:execute",
            "runs:read",
            "runs:control",
            "prompts:respond",
            "approvals:respond",
        ])
        .roles([ROLE])
        .tools(TOOL_NAMES)
        .state_dir(&state)
        .build()
        .unwrap();
    let manager = TargetManager::new();
    let target = manager
        .add_managed_local("This workspace", options)
        .await
        .unwrap();
    manager.select(&target).await.unwrap();
    manager.check_health().await;
    let bridge = Bridge::new(manager.clone());
    let mut crossed = Crossed::default();
    session(&bridge, &target, None, &mut crossed).await;
    crossed.add(&bridge.list_targets());
    manager.remove(&target).await.unwrap();
    crossed.result(&bridge.get_run(run_ref(&target, "run_x")).await);
    let _ = std::fs::remove_dir_all(&parent);

    let mut canaries = base_canaries();
    canaries.push(parent.display().to_string());
    crossed.assert_clean(&canaries);
    let stray: Vec<&String> = crossed
        .keys
        .iter()
        .filter(|k| !ALLOWED_KEYS.contains(&k.as_str()))
        .collect();
    assert!(
        stray.is_empty(),
        "keys outside the reviewed list crossed: {stray:?}"
    );
    assert!(
        crossed
            .texts
            .iter()
            .any(|t| t.contains("\"frame\":\"text\""))
    );
    // Silence the unused-frame-type lint path: the frames above are WatchFrame values.
    let _: Option<WatchFrame> = None;
}
