//! The release round trip for the Rust `.crate`: connect, create, watch to the end. It is
//! built in a fresh package (crates/colossus-sdk/README.md's "Install from a release
//! build", run as pasted) that depends on the release's unpacked `.crate`, against a
//! reference worker that `dev` started:
//!
//!     app PUBLIC_API_DIR INSTANCE_ID CERT_SHA256 BEARER_FILE
//!
//! It reads events through `output_text()` and `is_terminal()` and the ended run through
//! `final_run()`, so it names no payload variant.

use colossus_sdk::credentials::InMemoryCredentialProvider;
use colossus_sdk::model::CreateRunRequest;
use colossus_sdk::placement::DaemonOptions;
use colossus_sdk::{Bearer, Client};
use futures_util::StreamExt;

#[tokio::main]
async fn main() -> colossus_sdk::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, instance_id, pin, bearer_file] = args.as_slice() else {
        panic!("usage: app PUBLIC_API_DIR INSTANCE_ID CERT_SHA256 BEARER_FILE");
    };
    let bearer = std::fs::read_to_string(bearer_file).expect("the bearer file");
    let client = Client::connect(
        DaemonOptions::builder()
            .public_api_dir(dir)
            .expected_instance_id(instance_id.as_str())
            .expected_certificate_sha256(pin.as_str())
            .credentials(InMemoryCredentialProvider::new(Bearer::new(bearer.trim().to_owned())?))
            .build()?,
    )
    .await?;
    let info = client.server_info().await?;
    println!("rust: connected to {} over TLS 1.3", info.instance_id);
    let created = client
        .runs()
        .create(CreateRunRequest::text("colossus-script v1\nsay round trip from the rust crate\n"))
        .await?;
    println!("rust: created {}", created.run.run_id);
    let mut watch = client.runs().watch(&created.run.run_id);
    while let Some(event) = watch.next().await {
        let event = event?;
        if let Some(text) = event.output_text() {
            println!("rust: event {} output {text:?}", event.sequence);
        } else if event.is_terminal() {
            println!("rust: event {} terminal", event.sequence);
        } else {
            println!("rust: event {}", event.sequence);
        }
    }
    let run = watch.final_run().expect("a completed watch has the ended run");
    println!("rust: terminated {}", run.status);
    client.close();
    Ok(())
}
