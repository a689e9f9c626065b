//! Plain conversions from the SDK's model to protocol JSON.

use colossus_sdk::model::{
    Artifact, EventPayload, Interaction, InteractionKind, Run, RunEvent, ServerInfo, TokenBucket,
};
use serde_json::{Value, json};

pub(crate) fn interaction_view(i: &Interaction) -> Value {
    let mut view = json!({"interaction_id": i.interaction_id});
    match &i.kind {
        InteractionKind::Prompt(p) => {
            view["kind"] = json!("prompt");
            view["question"] = json!(p.question);
            view["choices"] = json!(p.choices);
        }
        InteractionKind::Approval(a) => {
            view["kind"] = json!("approval");
            view["action_class"] = json!(a.action_class.as_str());
            view["display_category"] = json!(a.display_category);
            view["origin"] = json!(a.origin);
            view["binding"] = json!(a.binding);
        }
        _ => view["kind"] = json!("unknown"),
    }
    view
}

pub(crate) fn run_view(r: &Run) -> Value {
    let result = r.result.as_ref().map(|res| {
        json!({
            "output_text": res.output_text,
            "failure_code": res.failure.as_ref().map(|f| f.code.clone()),
            "plan": res.plan.as_ref().map(|p| json!({
                "plan_id": p.plan_id, "revision": p.revision, "status": p.status.as_str(),
            })),
        })
    });
    json!({
        "run_id": r.run_id,
        "session_id": r.session_id,
        "mode": r.mode.as_str(),
        "role": r.role,
        "status": r.status.as_str(),
        "last_sequence": r.last_sequence,
        "idempotency_key": r.idempotency_key,
        "end_user_id": r.end_user_id,
        "max_turns": r.max_turns,
        "pending_interaction": r.pending_interaction.as_ref().map(interaction_view),
        "result": result,
    })
}

pub(crate) fn event_view(e: &RunEvent) -> Value {
    let mut view = json!({"run_id": e.run_id, "sequence": e.sequence});
    match &e.payload {
        EventPayload::StatusChanged {
            previous_status,
            status,
        } => {
            view["kind"] = json!("status_changed");
            view["previous_status"] = json!(previous_status.as_str());
            view["status"] = json!(status.as_str());
        }
        EventPayload::OutputDelta { text } => {
            view["kind"] = json!("output_delta");
            view["text"] = json!(text);
        }
        EventPayload::InteractionRequested(i) => {
            view["kind"] = json!("interaction_requested");
            view["interaction"] = interaction_view(i);
        }
        EventPayload::InteractionResolved {
            interaction_id,
            outcome,
            choice,
        } => {
            view["kind"] = json!("interaction_resolved");
            view["interaction_id"] = json!(interaction_id);
            view["outcome"] = json!(outcome.as_str());
            view["choice"] = json!(choice);
        }
        EventPayload::ToolActivity {
            action_class,
            display_category,
            phase,
            ..
        } => {
            view["kind"] = json!("tool_activity");
            view["action_class"] = json!(action_class.as_str());
            view["display_category"] = json!(display_category);
            view["phase"] = json!(phase.as_str());
        }
        EventPayload::RunTerminated { status, .. } => {
            view["kind"] = json!("terminated");
            view["terminal_status"] = json!(status.as_str());
        }
        _ => view["kind"] = json!("unknown"),
    }
    view
}

fn bucket_view(b: &TokenBucket) -> Value {
    json!({"refill_per_second": b.refill_per_second, "burst": b.burst})
}

pub(crate) fn server_info_view(s: &ServerInfo) -> Value {
    let l = &s.limits;
    let mut caps = s.capabilities.clone();
    caps.sort();
    json!({
        "instance_id": s.instance_id,
        "api_package": s.api_package,
        "api_version": s.api_version,
        "api_major": s.api_major,
        "deployment_mode": s.deployment_mode.as_str(),
        "capabilities": caps,
        "limits": {
            "max_active_runs": l.max_active_runs,
            "max_active_runs_per_application": l.max_active_runs_per_application,
            "create_rate": bucket_view(&l.create_rate),
            "create_rate_per_application": bucket_view(&l.create_rate_per_application),
            "max_watches": l.max_watches,
            "max_watches_per_application": l.max_watches_per_application,
            "max_concurrent_list_runs": l.max_concurrent_list_runs,
            "max_concurrent_list_runs_per_application": l.max_concurrent_list_runs_per_application,
            "max_connections": l.max_connections,
            "max_concurrent_streams_per_connection": l.max_concurrent_streams_per_connection,
            "max_request_bytes": l.max_request_bytes,
            "max_response_bytes": l.max_response_bytes,
            "max_header_bytes": l.max_header_bytes,
            "max_events_per_run": l.max_events_per_run,
            "reserved_lifecycle_events": l.reserved_lifecycle_events,
            "max_input_parts": l.max_input_parts,
            "max_input_bytes": l.max_input_bytes,
            "max_turns": l.max_turns,
            "default_max_turns": l.default_max_turns,
            "max_list_page_size": l.max_list_page_size,
            "max_list_status_filters": l.max_list_status_filters,
            "max_artifact_bytes": l.max_artifact_bytes,
            "max_artifact_chunk_bytes": l.max_artifact_chunk_bytes,
            "handshake_timeout": l.handshake_timeout.as_secs_f64(),
            "max_connection_age": l.max_connection_age.as_secs_f64(),
        },
    })
}

pub(crate) fn artifact_view(a: &Artifact) -> Value {
    json!({
        "artifact_id": a.artifact_id,
        "media_type": a.media_type,
        "size_bytes": a.size_bytes,
        "sha256": a.sha256,
        "display_name": a.display_name,
    })
}
