//! The client over the embedded runtime, through the public API only: scripts,
//! interactions, cancel, failures, idempotency, capabilities, artifacts and pages.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};

use colossus_sdk::embedded::EmbeddedRuntime;
use colossus_sdk::model::*;
use colossus_sdk::{Client, Kind, reasons};

mod support;
use support::{
    all_pages, assert_download, assert_upload_refused, create_runs, script, start_script,
};

#[tokio::test]
async fn a_plain_run_echoes_its_text() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let created = client
        .runs()
        .create(CreateRunRequest::builder().text("one").text("two").build())
        .await
        .unwrap();
    assert!(!created.replayed);
    let text: Vec<String> = client
        .runs()
        .text_stream(&created.run.run_id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(text.concat(), "one\ntwo");
    let run = client.runs().wait(&created.run.run_id).await.unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
}

#[tokio::test]
async fn a_script_with_a_prompt_and_an_approval_runs_to_the_end() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let lines = "say start\ntool git.status\nask Pick? | a | b\napprove shell.run\nsay end";
    let run = start_script(&client, lines).await;
    let mut watch = client.runs().watch(&run.run_id);
    let mut kinds = Vec::new();
    while let Some(event) = watch.next().await {
        let event = event.unwrap();
        match &event.payload {
            EventPayload::InteractionRequested(i) => {
                let answer = match &i.kind {
                    InteractionKind::Prompt(p) => {
                        // A choice that was not shown is refused.
                        let err = client
                            .runs()
                            .respond(&run.run_id, &i.interaction_id, Answer::choice("c"))
                            .await
                            .unwrap_err();
                        assert_eq!(err.reason(), Some(reasons::INTERACTION_ANSWER_MISMATCH));
                        Answer::choice(p.choices[1].clone())
                    }
                    InteractionKind::Approval(a) => {
                        Answer::approval(a.binding.clone(), ApprovalDecision::Approve)
                    }
                    other => unreachable!("{other:?}"),
                };
                client
                    .runs()
                    .respond(&run.run_id, &i.interaction_id, answer)
                    .await
                    .unwrap();
                kinds.push("asked");
            }
            EventPayload::ToolActivity {
                phase,
                action_class,
                ..
            } => {
                kinds.push(if *phase == ToolActivityPhase::Completed {
                    "done"
                } else {
                    "tool"
                });
                assert_ne!(*action_class, ActionClass::Unspecified);
            }
            EventPayload::RunTerminated { status, .. } => {
                assert_eq!(*status, RunStatus::Succeeded);
                kinds.push("end");
            }
            _ => {}
        }
    }
    assert!(watch.is_complete());
    assert_eq!(
        kinds,
        ["tool", "done", "asked", "asked", "tool", "done", "end"]
    );
    let done = client.runs().get(&run.run_id).await.unwrap();
    assert_eq!(done.result.unwrap().output_text, "startend");
    assert_eq!(done.last_sequence, watch.last_sequence());
}

#[tokio::test]
async fn cancel_ends_a_sleeping_run_and_a_failing_script_fails() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let run = start_script(&client, "sleep forever").await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    client.runs().cancel(&run.run_id).await.unwrap();
    let done = client.runs().wait(&run.run_id).await.unwrap();
    assert_eq!(done.status, RunStatus::Cancelled);

    let run = start_script(&client, "say x\nfail boom it broke").await;
    let done = client.runs().wait(&run.run_id).await.unwrap();
    assert_eq!(done.status, RunStatus::Failed);
    assert_eq!(done.result.unwrap().failure.unwrap().code, "boom");
}

#[tokio::test]
async fn a_bad_script_is_refused_naming_its_line() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let err = client
        .runs()
        .create(script("say ok\ndance"))
        .await
        .unwrap_err();
    assert!(err.is(Kind::InvalidArgument));
    assert_eq!(err.metadata()["field"], "input[0].text");
    assert!(err.message().contains("line 3"), "{err}");
    assert!(err.idempotency_key().is_some());
}

#[tokio::test]
async fn the_same_request_again_replays_and_a_different_one_conflicts() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let request = CreateRunRequest::builder()
        .idempotency_key("k-1")
        .text("hi")
        .build();
    let first = client.runs().create(request.clone()).await.unwrap();
    let again = client.runs().create(request).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.run.run_id, first.run.run_id);
    assert_eq!(again.idempotency_key, "k-1");
    let other = CreateRunRequest::builder()
        .idempotency_key("k-1")
        .text("other")
        .build();
    let err = client.runs().create(other).await.unwrap_err();
    assert!(err.is(Kind::IdempotencyConflict));
    assert_eq!(err.idempotency_key(), Some("k-1"));
}

#[tokio::test]
async fn capabilities_gate_calls_before_anything_is_sent() {
    let rt = EmbeddedRuntime::builder()
        .capabilities(Vec::<String>::new())
        .build();
    let client = Client::embedded(rt);
    let plan = CreateRunRequest::builder()
        .text("go")
        .plan_action(PlanAction::new("run_1", 1, PlanActionKind::ExecuteDirect))
        .build();
    let err = client.runs().create(plan).await.unwrap_err();
    assert!(err.is(Kind::CapabilityMissing));
    assert_eq!(err.reason(), Some(reasons::CAPABILITY_NOT_SUPPORTED));
    assert_upload_refused(&client).await;
    let runs: Vec<Run> = client
        .runs()
        .list(ListRunsQuery::new())
        .try_collect()
        .await
        .unwrap();
    assert!(runs.is_empty(), "nothing was created");
}

#[tokio::test]
async fn artifacts_round_trip_and_list_pages_follow_tokens() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let data = vec![7u8; 200_000];
    let stored = client
        .artifacts()
        .upload_named(&data, "application/octet-stream", "blob.bin")
        .await
        .unwrap();
    assert_eq!(stored.size_bytes, 200_000);
    assert_download(&client, &stored, &data).await;

    create_runs(&client, 5).await;
    let pages = all_pages(&client, 2).await;
    assert_eq!(
        pages.iter().map(|p| p.runs.len()).collect::<Vec<_>>(),
        [2, 2, 1]
    );
    let resumed = client
        .runs()
        .list_page(
            &ListRunsQuery::new()
                .page_size(2)
                .with_page_token(pages[0].next_page_token.clone().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(resumed.runs, pages[1].runs);
}

#[tokio::test]
async fn a_closed_client_refuses_calls_and_ends_its_runs() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let run = start_script(&client, "sleep forever").await;
    let other = client.clone();
    client.close();
    let err = other.runs().get(&run.run_id).await.unwrap_err();
    assert!(err.is(Kind::ClientClosed));
}

#[tokio::test]
async fn dropping_a_wait_leaves_no_task_behind() {
    let client = Client::embedded(EmbeddedRuntime::new());
    let run = start_script(&client, "sleep forever").await;
    let before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let waited =
        tokio::time::timeout(Duration::from_millis(20), client.runs().wait(&run.run_id)).await;
    assert!(waited.is_err());
    let mut watch = client.runs().watch(&run.run_id);
    let _ = tokio::time::timeout(Duration::from_millis(20), watch.next()).await;
    drop(watch);
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        before
    );
}
