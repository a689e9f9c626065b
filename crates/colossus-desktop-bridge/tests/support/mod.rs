//! Shared by the bridge's integration tests: JSON inputs as a renderer would send them and
//! a frame collector.

#![allow(dead_code)]

use colossus_desktop_bridge::input::{
    CreateRunInput, ListRunsInput, RespondInput, RunRef, WatchInput,
};
use colossus_desktop_bridge::{Bridge, TargetId, TargetManager, WatchFrame};
use colossus_sdk::Client;
use colossus_sdk::embedded::EmbeddedRuntime;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Decodes renderer JSON into an input shape, as the plugin's IPC layer does.
pub fn from<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a well-formed input")
}

pub fn create(target: &TargetId, text: &str, mode: Value) -> CreateRunInput {
    from(json!({"target_id": target.as_str(), "text": text, "mode": mode}))
}

pub fn run_ref(target: &TargetId, run_id: &str) -> RunRef {
    from(json!({"target_id": target.as_str(), "run_id": run_id}))
}

pub fn watch(target: &TargetId, run_id: &str) -> WatchInput {
    from(json!({"target_id": target.as_str(), "run_id": run_id}))
}

pub fn list(target: &TargetId) -> ListRunsInput {
    from(json!({"target_id": target.as_str()}))
}

pub fn choose(target: &TargetId, run_id: &str, interaction_id: &str, choice: &str) -> RespondInput {
    from(json!({"target_id": target.as_str(), "run_id": run_id,
        "interaction_id": interaction_id, "answer": {"kind": "choice", "choice": choice}}))
}

pub fn approve(
    target: &TargetId,
    run_id: &str,
    interaction_id: &str,
    decision: &str,
) -> RespondInput {
    from(json!({"target_id": target.as_str(), "run_id": run_id,
        "interaction_id": interaction_id, "answer": {"kind": "approval", "decision": decision}}))
}

pub fn script(lines: &[&str]) -> String {
    let mut text = String::from("colossus-script v1\n");
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// A bridge over one selected Embedded target; also returns the native client.
pub async fn embedded_bridge() -> (Bridge, TargetId, Client) {
    let client = Client::embedded(EmbeddedRuntime::new());
    let manager = TargetManager::new();
    let target = manager.add_embedded("On this device", client.clone()).await;
    manager.select(&target).await.expect("select");
    (Bridge::new(manager), target, client)
}

/// Every frame of a watch until its end frame.
pub async fn frames(bridge: &Bridge, input: WatchInput) -> Vec<WatchFrame> {
    let mut watch = bridge.watch_run(input).await.expect("watch");
    let mut out = Vec::new();
    while let Some(frame) = watch.next_frame().await {
        out.push(frame);
    }
    out
}
