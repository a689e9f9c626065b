//! Connecting to an installed worker. The expected identity comes from your own
//! configuration (here: environment variables), never from the discovery folder; the
//! bearer is piped in on stdin.
//!
//! ```sh
//! colossus-reference-worker dev --public-api-dir ~/colossus --json   # prints the values
//! COLOSSUS_DIR=~/colossus COLOSSUS_INSTANCE_ID=wkr_... COLOSSUS_PIN=8cf2... \
//!   cargo run -p colossus-sdk --example daemon < ~/colossus/dev-app.bearer
//! ```

use colossus_sdk::credentials::InMemoryCredentialProvider;
use colossus_sdk::model::CreateRunRequest;
use colossus_sdk::placement::DaemonOptions;
use colossus_sdk::{Bearer, Client};

fn setting(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name}"))
}

#[tokio::main]
async fn main() -> colossus_sdk::Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .expect("the bearer on stdin");
    let client = Client::connect(
        DaemonOptions::builder()
            .public_api_dir(setting("COLOSSUS_DIR"))
            .expected_instance_id(setting("COLOSSUS_INSTANCE_ID"))
            .expected_certificate_sha256(setting("COLOSSUS_PIN"))
            .credentials(InMemoryCredentialProvider::new(Bearer::new(
                line.trim().to_owned(),
            )?))
            .build()?,
    )
    .await?;
    let info = client.server_info().await?;
    println!(
        "connected to {} ({})",
        info.instance_id, info.server_version
    );

    let created = client
        .runs()
        .create(CreateRunRequest::text("hello from Rust"))
        .await?;
    let run = client.runs().wait(&created.run.run_id).await?;
    println!("{} {:?}", run.status, run.result.map(|r| r.output_text));
    client.close();
    Ok(())
}
