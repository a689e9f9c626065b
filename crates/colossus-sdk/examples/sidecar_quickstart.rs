//! Quick start: the SDK starts a private worker, runs one request and prints its output as
//! it streams. The worker program is `$COLOSSUS_REFERENCE_WORKER` (default:
//! `colossus-reference-worker` on PATH).
//!
//! `cargo run -p colossus-sdk --example sidecar_quickstart`

use futures_util::StreamExt;

use colossus_sdk::Client;
use colossus_sdk::model::{CreateRunRequest, EventPayload};
use colossus_sdk::placement::SidecarOptions;

#[tokio::main]
async fn main() -> colossus_sdk::Result<()> {
    let worker = std::env::var("COLOSSUS_REFERENCE_WORKER")
        .unwrap_or_else(|_| "colossus-reference-worker".to_owned());
    let client = Client::start_sidecar(
        SidecarOptions::builder(worker, "quickstart")
            .scopes(["runs:execute", "runs:read"])
            .build()?,
    )
    .await?;

    let created = client
        .runs()
        .create(CreateRunRequest::text("Say hello"))
        .await?;
    let mut watch = client.runs().watch(&created.run.run_id);
    while let Some(event) = watch.next().await {
        if let EventPayload::OutputDelta { text } = event?.payload {
            print!("{text}");
        }
    }
    println!();
    client.close();
    Ok(())
}
