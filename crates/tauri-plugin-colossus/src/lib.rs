//! `tauri-plugin-colossus`: the Tauri 2 command layer over `colossus-desktop-bridge`.
//!
//! The plugin registers exactly the bridge's product operations as plugin commands
//! ([`COMMANDS`], the same list as `build.rs` and the permission files), so every one of
//! them goes through Tauri's capability check: a window runs a command only when a
//! capability grants it, and a remote origin runs none (B9, B17). The default permission set
//! grants only `desktop_release_channel`; `colossus:work` and `colossus:fleet` are the
//! named sets for a Work window and a Fleet window.
//!
//! The command layer is thin: it decodes the closed input shapes, calls the [`Bridge`] and
//! returns its sanitized DTOs or `BridgeError`s. `watch_run` streams the bridge's frames
//! over a [`Channel`] in sequence order (text deltas already coalesced) from a task that is
//! aborted when its webview goes away.
//!
//! ```ignore
//! tauri::Builder::default()
//!     .plugin(tauri_plugin_colossus::init(bridge))
//! ```

use std::collections::HashMap;
use std::sync::Mutex;

use colossus_desktop_bridge::dto::{RunDto, RunPageDto, TargetDto};
use colossus_desktop_bridge::input::{
    CreateRunInput, ListRunsInput, RespondInput, RunRef, WatchInput,
};
use colossus_desktop_bridge::{Bridge, BridgeError, ReleaseChannel, RunWatch, WatchFrame};
use tauri::ipc::Channel;
use tauri::plugin::{Builder, TauriPlugin};
use tauri::{Manager, Runtime, State, Webview};

/// The plugin's commands, one per product operation, in the bridge's order.
pub const COMMANDS: [&str; 8] = [
    "create_run",
    "get_run",
    "list_runs",
    "watch_run",
    "cancel_run",
    "respond_interaction",
    "list_targets",
    "desktop_release_channel",
];

/// The plugin's state: the bridge and the watch tasks of each webview.
struct Colossus {
    bridge: Bridge,
    watches: Mutex<HashMap<String, Vec<tokio::task::AbortHandle>>>,
}

/// The plugin over `bridge`. Native code keeps its own clone of the bridge to add,
/// select and remove targets (the renderer cannot).
pub fn init<R: Runtime>(bridge: Bridge) -> TauriPlugin<R> {
    Builder::new("colossus")
        .invoke_handler(tauri::generate_handler![
            create_run,
            get_run,
            list_runs,
            watch_run,
            cancel_run,
            respond_interaction,
            list_targets,
            desktop_release_channel,
        ])
        .setup(move |app, _api| {
            app.manage(Colossus {
                bridge,
                watches: Mutex::new(HashMap::new()),
            });
            Ok(())
        })
        .on_event(|app, event| {
            if let tauri::RunEvent::WindowEvent {
                label,
                event: tauri::WindowEvent::Destroyed,
                ..
            } = event
            {
                end_watches(app, label);
            }
        })
        .build()
}

/// Ends every watch task of a webview (its runs keep running). The plugin calls it when
/// the window is destroyed; a host may call it when a webview navigates away.
pub fn end_watches<R: Runtime>(app: &tauri::AppHandle<R>, label: &str) {
    if let Some(state) = app.try_state::<Colossus>() {
        let tasks = state
            .watches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(label);
        for task in tasks.into_iter().flatten() {
            task.abort();
        }
    }
}

/// The number of watch tasks a webview has running (for tests and diagnostics).
pub fn active_watches<R: Runtime>(app: &tauri::AppHandle<R>, label: &str) -> usize {
    app.try_state::<Colossus>()
        .map(|s| {
            let mut map = s.watches.lock().unwrap_or_else(|p| p.into_inner());
            let list = map.entry(label.to_owned()).or_default();
            list.retain(|t| !t.is_finished());
            list.len()
        })
        .unwrap_or(0)
}

#[tauri::command]
async fn create_run(
    state: State<'_, Colossus>,
    input: CreateRunInput,
) -> Result<RunDto, BridgeError> {
    state.bridge.create_run(input).await
}

#[tauri::command]
async fn get_run(state: State<'_, Colossus>, input: RunRef) -> Result<RunDto, BridgeError> {
    state.bridge.get_run(input).await
}

#[tauri::command]
async fn list_runs(
    state: State<'_, Colossus>,
    input: ListRunsInput,
) -> Result<RunPageDto, BridgeError> {
    state.bridge.list_runs(input).await
}

#[tauri::command]
async fn cancel_run(state: State<'_, Colossus>, input: RunRef) -> Result<RunDto, BridgeError> {
    state.bridge.cancel_run(input).await
}

#[tauri::command]
async fn respond_interaction(
    state: State<'_, Colossus>,
    input: RespondInput,
) -> Result<RunDto, BridgeError> {
    state.bridge.respond_interaction(input).await
}

#[tauri::command]
fn list_targets(state: State<'_, Colossus>) -> Vec<TargetDto> {
    state.bridge.list_targets()
}

#[tauri::command]
fn desktop_release_channel() -> ReleaseChannel {
    colossus_desktop_bridge::desktop_release_channel()
}

/// Starts the watch and returns once it is bound; frames then arrive on `on_frame` in
/// sequence order, ending with one `end` frame. The task ends with its webview.
#[tauri::command]
async fn watch_run<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, Colossus>,
    input: WatchInput,
    on_frame: Channel<WatchFrame>,
) -> Result<(), BridgeError> {
    let watch = state.bridge.watch_run(input).await?;
    let task = tokio::spawn(forward(watch, on_frame));
    let handle = task.abort_handle();
    state
        .watches
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(webview.label().to_owned())
        .or_default()
        .push(handle);
    Ok(())
}

/// Sends every frame of `watch` to `channel`, in order, until the end frame (or until
/// the channel is gone, which ends the watch, never the run). The bridge has already
/// coalesced small text deltas, so the channel (which has no flow control) carries few,
/// bounded frames.
pub async fn forward(mut watch: RunWatch, channel: Channel<WatchFrame>) {
    while let Some(frame) = watch.next_frame().await {
        if channel.send(frame).is_err() {
            break;
        }
    }
}
