//! The native half of a desktop bridge over the Colossus Rust SDK.
//!
//! A desktop WebView is untrusted renderer code. It gets a handful of product-level
//! operations ([`Bridge::create_run`], [`Bridge::get_run`], [`Bridge::list_runs`],
//! [`Bridge::watch_run`], [`Bridge::cancel_run`], [`Bridge::respond_interaction`],
//! [`Bridge::list_targets`] and the zero-input [`desktop_release_channel`]) and nothing
//! else: no generic "invoke an SDK method", "read a path", "run a process" or "call a URL".
//! Everything that can authenticate, locate or widen authority stays on this side:
//!
//! - [`TargetManager`] holds the authenticated SDK clients keyed by opaque random
//!   [`TargetId`]s (never derived from a path, endpoint or instance ID): one Managed Local
//!   sidecar, External daemons (added only after a native [`ConfirmExternal`] dialog
//!   names the label, instance ID and full pin) and Embedded runtimes;
//! - one selected Work target with a selection epoch: a switch ends every watch of the
//!   old selection before it can deliver another event (B4), waits for in-flight
//!   mutations and never replays one (B5);
//! - run IDs are bound to the target that created or listed them and the binding is
//!   required again for every get, watch, cancel and respond (B3);
//! - inputs are closed shapes ([`input`]: unknown fields refused, lengths bounded) and
//!   outputs are sanitized DTOs ([`dto`]): no bearer, certificate, pin, descriptor or
//!   state path, scopes, idempotency key, tool name or argument, approval binding or
//!   end-user ID; sequences cross as strings; errors cross as [`BridgeError`] (kind,
//!   reason, retryable, delay, field), never as the SDK's message or source chain (B6-B8).
//!
//! The crate has no Tauri dependency: `crates/tauri-plugin-colossus` is a thin command
//! layer over it, and every rule here is tested without a WebView.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use colossus_desktop_bridge::{Bridge, TargetManager, input::CreateRunInput};
//! use colossus_sdk::{Client, embedded::EmbeddedRuntime};
//!
//! let manager = TargetManager::new();
//! let target = manager.add_embedded("On this device", Client::embedded(EmbeddedRuntime::new())).await;
//! manager.select(&target).await.unwrap();
//! let bridge = Bridge::new(manager);
//!
//! let input: CreateRunInput = serde_json::from_value(serde_json::json!({
//!     "target_id": target.as_str(), "text": "Say hello", "mode": {"kind": "execute"},
//! })).unwrap();
//! let run = bridge.create_run(input).await.unwrap();
//! assert_eq!(run.target_id, target.as_str());
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bridge;
pub mod dto;
mod error;
mod external;
pub mod input;
mod manager;
mod release;
mod target;
mod watch;

pub use bridge::Bridge;
pub use error::{BridgeError, ErrorKind};
pub use external::{ConfirmExternal, ExternalConfirmation, ExternalTarget};
pub use manager::{ManagerOptions, TargetManager};
pub use release::{ReleaseChannel, desktop_release_channel};
pub use target::{TargetHealth, TargetId, TargetKind};
pub use watch::{RunWatch, WatchEnd, WatchFrame};

/// The product operations a renderer may call, in one list: the Tauri plugin's command
/// list, its handler list and its permission list are checked against it (B9).
pub const PRODUCT_OPERATIONS: [&str; 8] = [
    "create_run",
    "get_run",
    "list_runs",
    "watch_run",
    "cancel_run",
    "respond_interaction",
    "list_targets",
    "desktop_release_channel",
];

#[cfg(test)]
mod tests {
    // B9: the product list is small, unique and holds no generic capability.
    #[test]
    fn the_product_operations_are_unique_and_none_is_generic() {
        let mut seen = std::collections::HashSet::new();
        assert!(super::PRODUCT_OPERATIONS.iter().all(|op| seen.insert(*op)));
        for op in super::PRODUCT_OPERATIONS {
            for generic in [
                "invoke", "path", "process", "url", "exec", "spawn", "fetch", "shell",
            ] {
                assert!(!op.contains(generic), "{op}");
            }
        }
    }
}
