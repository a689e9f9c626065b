//! A minimal desktop app: one Work window over an Embedded target (so the end-to-end test
//! needs no worker), granted the plugin's `work` set and nothing else.

use colossus_desktop_bridge::{Bridge, TargetManager};
use colossus_sdk::Client;
use colossus_sdk::embedded::EmbeddedRuntime;

fn main() {
    let manager = TargetManager::new();
    tauri::async_runtime::block_on(async {
        let target = manager
            .add_embedded("On this device", Client::embedded(EmbeddedRuntime::new()))
            .await;
        manager.select(&target).await.expect("select the embedded target");
    });
    tauri::Builder::default()
        .plugin(tauri_plugin_colossus::init(Bridge::new(manager)))
        .run(tauri::generate_context!())
        .expect("the desktop example failed");
}
