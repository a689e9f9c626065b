//! The product operations against an Embedded target: routing by the Work selection, run
//! bindings, selection epochs, watch limits, coalesced ordered frames, plan actions and
//! native approval bindings.

mod support;

use std::time::Duration;

use colossus_desktop_bridge::dto::{EventDto, InteractionRequestDto, RunDto};
use colossus_desktop_bridge::{
    Bridge, ErrorKind, ManagerOptions, TargetId, TargetManager, WatchEnd, WatchFrame,
};
use colossus_sdk::Client;
use colossus_sdk::embedded::EmbeddedRuntime;
use serde_json::json;
use support::*;

/// A manager with two embedded targets, "a" selected, and a bridge over it.
async fn two_targets_first_selected() -> (TargetManager, Bridge, TargetId, TargetId) {
    let manager = TargetManager::new();
    let a = manager
        .add_embedded("a", Client::embedded(EmbeddedRuntime::new()))
        .await;
    let b = manager
        .add_embedded("b", Client::embedded(EmbeddedRuntime::new()))
        .await;
    manager.select(&a).await.unwrap();
    let bridge = Bridge::new(manager.clone());
    (manager, bridge, a, b)
}

async fn until(bridge: &Bridge, target: &TargetId, run_id: &str, status: &str) -> RunDto {
    for _ in 0..500 {
        let run = bridge.get_run(run_ref(target, run_id)).await.expect("get");
        if run.status == status {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {run_id} never reached {status}");
}

// B1: target IDs are opaque and random; routing goes through the manager only.
#[tokio::test]
async fn target_ids_are_opaque_and_a_renderer_cannot_route_by_guessing() {
    let manager = TargetManager::new();
    let a = manager
        .add_embedded("alpha", Client::embedded(EmbeddedRuntime::new()))
        .await;
    let b = manager
        .add_embedded("alpha", Client::embedded(EmbeddedRuntime::new()))
        .await;
    assert_ne!(a, b, "the same label gives different IDs");
    assert!(!a.as_str().contains("alpha") && !a.as_str().contains("embedded"));
    manager.select(&a).await.unwrap();
    let bridge = Bridge::new(manager);
    let forged = "tgt_00000000000000000000000000000000";
    let refused = bridge
        .create_run(from(
            json!({"target_id": forged, "text": "hi", "mode": {"kind": "execute"}}),
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.kind, ErrorKind::UnknownTarget);
    let malformed = bridge
        .create_run(from(
            json!({"target_id": "127.0.0.1:7443", "text": "hi", "mode": {"kind": "execute"}}),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (malformed.kind, malformed.field),
        (ErrorKind::InvalidInput, Some("target_id"))
    );
}

// B3: Work sends an operation to exactly the selected target, and a run ID only to the
// target that created or listed it.
#[tokio::test]
async fn run_ids_are_bound_to_their_target_and_work_goes_to_the_selection_only() {
    let (manager, bridge, a, b) = two_targets_first_selected().await;

    let on_b = bridge
        .create_run(create(&b, "hi", json!({"kind": "execute"})))
        .await
        .unwrap_err();
    assert_eq!(on_b.kind, ErrorKind::NotSelected);

    let run = bridge
        .create_run(create(&a, "hi", json!({"kind": "execute"})))
        .await
        .unwrap();
    assert_eq!(run.target_id, a.as_str());
    manager.select(&b).await.unwrap();
    // The old target is no longer Work; the new one never saw this run.
    assert_eq!(
        bridge
            .get_run(run_ref(&a, &run.run_id))
            .await
            .unwrap_err()
            .kind,
        ErrorKind::NotSelected
    );
    for err in [
        bridge.get_run(run_ref(&b, &run.run_id)).await.unwrap_err(),
        bridge
            .cancel_run(run_ref(&b, &run.run_id))
            .await
            .unwrap_err(),
        bridge.watch_run(watch(&b, &run.run_id)).await.unwrap_err(),
        bridge
            .respond_interaction(choose(&b, &run.run_id, "int_1", "yes"))
            .await
            .unwrap_err(),
    ] {
        assert_eq!(err.kind, ErrorKind::RunNotBound);
    }
    // Listing binds what the target itself reports.
    manager.select(&a).await.unwrap();
    let fresh = Bridge::new(manager.clone());
    let page = fresh.list_runs(list(&a)).await.unwrap();
    assert!(page.runs.iter().any(|r| r.run_id == run.run_id));
    fresh.get_run(run_ref(&a, &run.run_id)).await.unwrap();
}

// B4: a selection switch ends the old watch before it can deliver another event.
#[tokio::test]
async fn a_selection_switch_ends_an_old_watch_before_its_next_frame() {
    let (manager, bridge, a, b) = two_targets_first_selected().await;
    let text = script(&["say one", "say two", "say three", "sleep forever"]);
    let run = bridge
        .create_run(create(&a, &text, json!({"kind": "execute"})))
        .await
        .unwrap();
    until(&bridge, &a, &run.run_id, "running").await;
    let mut old = bridge.watch_run(watch(&a, &run.run_id)).await.unwrap();
    // The events are already there; switch before reading any.
    manager.select(&b).await.unwrap();
    assert_eq!(
        old.next_frame().await,
        Some(WatchFrame::End {
            reason: WatchEnd::SelectionChanged,
            error: None
        })
    );
    assert_eq!(old.next_frame().await, None);

    // And a watch waiting for an event ends as soon as the selection moves.
    manager.select(&a).await.unwrap();
    let mut waiting = bridge.watch_run(watch(&a, &run.run_id)).await.unwrap();
    let mut seen = 0;
    while seen < 4 {
        match waiting.next_frame().await.unwrap() {
            WatchFrame::End { .. } => panic!("ended early"),
            _ => seen += 1,
        }
        if seen >= 2 {
            break;
        }
    }
    let switch = {
        let manager = manager.clone();
        let b = b.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            manager.select(&b).await.unwrap();
        })
    };
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(WatchFrame::End { reason, .. }) = waiting.next_frame().await {
                return reason;
            }
        }
    })
    .await
    .expect("the watch ended");
    assert_eq!(end, WatchEnd::SelectionChanged);
    switch.await.unwrap();
}

// B11: frames arrive in sequence order, small text deltas joined.
#[tokio::test]
async fn watch_frames_are_in_order_with_text_deltas_coalesced() {
    let (bridge, target, _) = embedded_bridge().await;
    let lines: Vec<String> = (0..200).map(|i| format!("say d{i};")).collect();
    let mut steps: Vec<&str> = lines.iter().map(String::as_str).collect();
    steps.insert(100, "tool filesystem.read");
    let run = bridge
        .create_run(create(&target, &script(&steps), json!({"kind": "execute"})))
        .await
        .unwrap();
    until(&bridge, &target, &run.run_id, "succeeded").await;
    let frames = frames(&bridge, watch(&target, &run.run_id)).await;
    let mut last = 0u64;
    let mut text = String::new();
    let mut text_frames = 0;
    for frame in &frames {
        match frame {
            WatchFrame::Text {
                first_sequence,
                last_sequence,
                text: t,
            } => {
                let (first, end): (u64, u64) = (
                    first_sequence.parse().unwrap(),
                    last_sequence.parse().unwrap(),
                );
                assert!(first > last && end >= first, "{frames:?}");
                last = end;
                text.push_str(t);
                text_frames += 1;
            }
            WatchFrame::Event { sequence, .. } => {
                let s: u64 = sequence.parse().unwrap();
                assert!(s > last);
                last = s;
            }
            WatchFrame::End { reason, .. } => assert_eq!(*reason, WatchEnd::Completed),
        }
    }
    let expected: String = (0..200).map(|i| format!("d{i};")).collect();
    assert_eq!(text, expected);
    assert!(text_frames < 20, "200 deltas in {text_frames} frames");
    assert!(matches!(
        frames.last(),
        Some(WatchFrame::End {
            reason: WatchEnd::Completed,
            ..
        })
    ));
}

// B12: per-target watch limits.
#[tokio::test]
async fn each_target_has_a_watch_limit() {
    let manager = TargetManager::with_options(ManagerOptions::default().watches_per_target(1));
    let a = manager
        .add_embedded("a", Client::embedded(EmbeddedRuntime::new()))
        .await;
    manager.select(&a).await.unwrap();
    let bridge = Bridge::new(manager);
    let run = bridge
        .create_run(create(
            &a,
            &script(&["sleep forever"]),
            json!({"kind": "execute"}),
        ))
        .await
        .unwrap();
    let first = bridge.watch_run(watch(&a, &run.run_id)).await.unwrap();
    let refused = bridge.watch_run(watch(&a, &run.run_id)).await.unwrap_err();
    assert_eq!(
        (refused.kind, refused.retryable),
        (ErrorKind::WatchLimit, true)
    );
    drop(first);
    let again = bridge.watch_run(watch(&a, &run.run_id)).await.unwrap();
    drop(again);
    bridge.cancel_run(run_ref(&a, &run.run_id)).await.unwrap();
}

// B13: Execute, Plan and Research runs; a plan action names the source run and visible
// revision, never a Plan ID; the Plan comes back as typed fields.
#[tokio::test]
async fn plan_research_and_plan_actions_map_to_the_public_run_modes() {
    let (bridge, target, _) = embedded_bridge().await;
    let plan = bridge
        .create_run(create(&target, "Ship the release", json!({"kind": "plan"})))
        .await
        .unwrap();
    assert_eq!(plan.mode, "plan");
    let done = until(&bridge, &target, &plan.run_id, "succeeded").await;
    let draft = done.result.unwrap().plan.unwrap();
    assert_eq!(
        (draft.revision.as_str(), draft.status.as_str()),
        ("1", "draft")
    );

    let revise = bridge
        .create_run(create(
            &target,
            "Shorter",
            json!({"kind": "plan_action",
            "source_run_id": plan.run_id, "revision": draft.revision, "action": "revise"}),
        ))
        .await
        .unwrap();
    assert_eq!(revise.mode, "plan");
    let revised = until(&bridge, &target, &revise.run_id, "succeeded").await;
    assert_eq!(revised.result.unwrap().plan.unwrap().revision, "2");
    let execute = bridge
        .create_run(create(
            &target,
            "Go",
            json!({"kind": "plan_action",
            "source_run_id": revise.run_id, "revision": "2", "action": "execute_goal"}),
        ))
        .await
        .unwrap();
    assert_eq!(execute.mode, "execute");

    let unbound = bridge
        .create_run(create(
            &target,
            "Go",
            json!({"kind": "plan_action",
            "source_run_id": "run_elsewhere", "revision": "1", "action": "execute_direct"}),
        ))
        .await
        .unwrap_err();
    assert_eq!(unbound.kind, ErrorKind::RunNotBound);

    let research = bridge
        .create_run(create(
            &target,
            "What changed?",
            json!({"kind": "research", "depth": 2,
            "lanes": ["repository", "web"]}),
        ))
        .await
        .unwrap();
    assert_eq!(research.mode, "research");
    let researched = until(&bridge, &target, &research.run_id, "succeeded").await;
    // The embedded runtime releases its report as output text (no typed research result).
    assert!(
        researched
            .result
            .unwrap()
            .output_text
            .starts_with("Report on")
    );
    let dup = bridge
        .create_run(create(
            &target,
            "x",
            json!({"kind": "research", "depth": 2, "lanes": ["web", "web"]}),
        ))
        .await
        .unwrap_err();
    assert_eq!(dup.field, Some("mode.lanes"));
}

// B14: approval bindings stay native; prompts echo a choice.
#[tokio::test]
async fn approvals_are_answered_with_a_decision_and_the_binding_stays_native() {
    let (bridge, target, client) = embedded_bridge().await;
    let text = script(&[
        "approve filesystem.write",
        "ask Ship it? | yes | no",
        "say done",
    ]);
    let run = bridge
        .create_run(create(&target, &text, json!({"kind": "execute"})))
        .await
        .unwrap();
    let waiting = until(&bridge, &target, &run.run_id, "waiting_for_input").await;
    let interaction = waiting.pending_interaction.clone().unwrap();
    assert!(matches!(
        interaction.request,
        InteractionRequestDto::Approval { .. }
    ));
    let native = client.runs().get(&run.run_id).await.unwrap();
    let binding = match native.pending_interaction.unwrap().kind {
        colossus_sdk::model::InteractionKind::Approval(a) => a.binding,
        other => panic!("{other:?}"),
    };
    assert!(!serde_json::to_string(&waiting).unwrap().contains(&binding));
    bridge
        .respond_interaction(approve(
            &target,
            &run.run_id,
            &interaction.interaction_id,
            "approve",
        ))
        .await
        .unwrap();
    let prompt = loop {
        let run = until(&bridge, &target, &run.run_id, "waiting_for_input").await;
        match run.pending_interaction {
            Some(i) if i.interaction_id != interaction.interaction_id => break i,
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    let wrong = bridge
        .respond_interaction(approve(
            &target,
            &run.run_id,
            &prompt.interaction_id,
            "approve",
        ))
        .await
        .unwrap_err();
    assert_eq!(wrong.kind, ErrorKind::FailedPrecondition);
    bridge
        .respond_interaction(choose(&target, &run.run_id, &prompt.interaction_id, "yes"))
        .await
        .unwrap();
    let done = until(&bridge, &target, &run.run_id, "succeeded").await;
    assert_eq!(done.result.unwrap().output_text, "done");
    let frames = frames(&bridge, watch(&target, &run.run_id)).await;
    assert!(frames.iter().any(|f| matches!(
        f,
        WatchFrame::Event {
            event: EventDto::ToolActivity { .. },
            ..
        }
    )));
}
