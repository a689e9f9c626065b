//! Resuming a watch: store the cursor, stop, and continue later from exactly there.
//!
//! `cargo run -p colossus-sdk --example watch_resume`

use futures_util::StreamExt;

use colossus_sdk::Client;
use colossus_sdk::embedded::EmbeddedRuntime;
use colossus_sdk::model::{CreateRunRequest, EventPayload};

#[tokio::main(flavor = "current_thread")]
async fn main() -> colossus_sdk::Result<()> {
    let client = Client::embedded(EmbeddedRuntime::new());
    let script = "colossus-script v1\nrepeat 6 say tick \nsleep 20\nsay done";
    let run = client
        .runs()
        .create(CreateRunRequest::text(script))
        .await?
        .run;

    // Read the first few events, then stop (the process could exit here).
    let mut watch = client.runs().watch(&run.run_id);
    for _ in 0..4 {
        if let Some(event) = watch.next().await {
            let event = event?;
            let what = event.output_text().unwrap_or("(not text)");
            println!("first watch: #{} {what:?}", event.sequence);
        }
    }
    let cursor = watch.last_sequence(); // persist this
    drop(watch); // closes the stream; the run goes on

    // Later: continue after the stored cursor. Nothing is delivered twice or skipped.
    let mut resumed = client.runs().watch_after(&run.run_id, cursor);
    while let Some(event) = resumed.next().await {
        let event = event?;
        if let EventPayload::OutputDelta { text } = &event.payload {
            println!("resumed: #{} {text:?}", event.sequence);
        }
    }
    assert!(resumed.is_complete());
    println!("complete at sequence {}", resumed.last_sequence());
    Ok(())
}
