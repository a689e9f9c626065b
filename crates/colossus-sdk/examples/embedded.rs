//! The embedded placement: a scripted run in this process, answered as it asks.
//!
//! `cargo run -p colossus-sdk --example embedded`

use futures_util::StreamExt;

use colossus_sdk::Client;
use colossus_sdk::embedded::EmbeddedRuntime;
use colossus_sdk::model::{
    Answer, ApprovalDecision, CreateRunRequest, EventPayload, InteractionKind,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> colossus_sdk::Result<()> {
    let client = Client::embedded(EmbeddedRuntime::new());
    let script = "colossus-script v1
say Looking at the repository.\\n
tool git.status
ask Which branch should I use? | main | release
approve shell.run
say Done.";
    let run = client
        .runs()
        .create(CreateRunRequest::text(script))
        .await?
        .run;

    let mut watch = client.runs().watch(&run.run_id);
    while let Some(event) = watch.next().await {
        match event?.payload {
            EventPayload::OutputDelta { text } => print!("{text}"),
            EventPayload::ToolActivity {
                action_class,
                display_category,
                phase,
                ..
            } => {
                println!("[{action_class} {display_category}: {phase}]");
            }
            EventPayload::InteractionRequested(interaction) => {
                let answer = match &interaction.kind {
                    InteractionKind::Prompt(prompt) => {
                        println!("? {} -> {}", prompt.question, prompt.choices[0]);
                        Answer::choice(prompt.choices[0].clone())
                    }
                    InteractionKind::Approval(approval) => {
                        println!("? approve {} -> yes", approval.action_class);
                        Answer::approval(approval.binding.clone(), ApprovalDecision::Approve)
                    }
                    _ => continue,
                };
                client
                    .runs()
                    .respond(&run.run_id, &interaction.interaction_id, answer)
                    .await?;
            }
            EventPayload::RunTerminated { status, .. } => println!("\n{status}"),
            _ => {}
        }
    }
    client.close();
    Ok(())
}
