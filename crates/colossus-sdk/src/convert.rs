//! The one boundary between the generated messages (`crate::proto`) and the public model.

use std::time::{Duration, SystemTime};

use crate::model::{self as m, EventPayload, InputPart};
use crate::proto as p;

fn time(ts: Option<&prost_types::Timestamp>) -> SystemTime {
    let Some(ts) = ts else {
        return SystemTime::UNIX_EPOCH;
    };
    let nanos = Duration::from_nanos(ts.nanos.clamp(0, 999_999_999) as u64);
    let secs = Duration::from_secs(ts.seconds.unsigned_abs());
    let base = if ts.seconds >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(secs)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(secs)
    };
    base.and_then(|t| t.checked_add(nanos))
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn duration(d: Option<&prost_types::Duration>) -> Duration {
    d.map_or(Duration::ZERO, |d| {
        Duration::new(
            d.seconds.max(0) as u64,
            d.nanos.clamp(0, 999_999_999) as u32,
        )
    })
}

fn bucket(b: Option<&p::TokenBucket>) -> m::TokenBucket {
    b.map_or_else(m::TokenBucket::default, |b| m::TokenBucket {
        refill_per_second: b.refill_per_second,
        burst: b.burst,
    })
}

fn limits(l: &p::Limits) -> m::Limits {
    m::Limits {
        max_active_runs: l.max_active_runs,
        max_active_runs_per_application: l.max_active_runs_per_application,
        create_rate: bucket(l.create_rate.as_ref()),
        create_rate_per_application: bucket(l.create_rate_per_application.as_ref()),
        max_watches: l.max_watches,
        max_watches_per_application: l.max_watches_per_application,
        max_concurrent_list_runs: l.max_concurrent_list_runs,
        max_concurrent_list_runs_per_application: l.max_concurrent_list_runs_per_application,
        max_connections: l.max_connections,
        max_concurrent_streams_per_connection: l.max_concurrent_streams_per_connection,
        max_request_bytes: l.max_request_bytes,
        max_response_bytes: l.max_response_bytes,
        max_header_bytes: l.max_header_bytes,
        max_events_per_run: l.max_events_per_run,
        reserved_lifecycle_events: l.reserved_lifecycle_events,
        max_input_parts: l.max_input_parts,
        max_input_bytes: l.max_input_bytes,
        max_turns: l.max_turns,
        default_max_turns: l.default_max_turns,
        max_list_page_size: l.max_list_page_size,
        max_list_status_filters: l.max_list_status_filters,
        max_artifact_bytes: l.max_artifact_bytes,
        max_artifact_chunk_bytes: l.max_artifact_chunk_bytes,
        handshake_timeout: duration(l.handshake_timeout.as_ref()),
        max_connection_age: duration(l.max_connection_age.as_ref()),
    }
}

/// The checked GetServerInfo answer as the public model (the transport's session keeps it).
#[allow(dead_code)] // until the transport's session lands
pub(crate) fn server_info(s: &p::ServerInfo) -> m::ServerInfo {
    m::ServerInfo {
        instance_id: s.instance_id.clone(),
        api_package: s.api_package.clone(),
        api_version: s.api_version.clone(),
        api_major: s.api_major,
        deployment_mode: m::DeploymentMode::from_number(s.deployment_mode),
        capabilities: s.capabilities.clone(),
        limits: s.limits.as_ref().map(limits).unwrap_or_default(),
        server_version: s.server_version.clone(),
    }
}

pub(crate) fn run(r: &p::Run) -> m::Run {
    let mut out = m::Run::new(r.run_id.clone(), m::RunStatus::from_number(r.status));
    out.session_id = r.session_id.clone();
    out.mode = m::RunMode::from_number(r.mode);
    out.role = r.role.clone();
    out.last_sequence = r.last_sequence;
    out.create_time = time(r.create_time.as_ref());
    out.update_time = time(r.update_time.as_ref());
    out.idempotency_key = r.idempotency_key.clone();
    out.end_user_id = r.end_user_id.clone();
    out.max_turns = r.max_turns;
    out.pending_interaction = r.pending_interaction.as_ref().map(interaction);
    out.result = r.result.as_ref().map(result);
    out
}

fn result(r: &p::RunResult) -> m::RunResult {
    m::RunResult {
        output_text: r.output_text.clone(),
        plan: r.plan.as_ref().map(|pl| m::PlanResult {
            plan_id: pl.plan_id.clone(),
            revision: pl.revision,
            status: m::PlanStatus::from_number(pl.status),
        }),
        research: r.research.as_ref().map(|rr| m::ResearchResult {
            report: rr.report.clone(),
            citations: rr
                .citations
                .iter()
                .map(|c| m::Citation {
                    lane: m::EvidenceLane::from_number(c.lane),
                    label: c.label.clone(),
                    url: c.url.clone(),
                })
                .collect(),
        }),
        failure: r
            .failure
            .as_ref()
            .map(|f| m::RunFailure::new(f.code.clone(), f.message.clone())),
    }
}

fn interaction(i: &p::Interaction) -> m::Interaction {
    let kind = match &i.kind {
        Some(p::interaction::Kind::Prompt(pr)) => {
            m::InteractionKind::Prompt(m::Prompt::new(pr.question.clone(), pr.choices.clone()))
        }
        Some(p::interaction::Kind::Approval(a)) => {
            let (display_category, origin) = match &a.target {
                Some(p::approval::Target::DisplayCategory(c)) => (Some(c.clone()), None),
                Some(p::approval::Target::Origin(o)) => (None, Some(o.clone())),
                None => (None, None),
            };
            m::InteractionKind::Approval(m::Approval {
                action_class: m::ActionClass::from_number(a.action_class),
                display_category,
                origin,
                binding: a.binding.clone(),
            })
        }
        None => m::InteractionKind::Unknown,
    };
    let mut out = m::Interaction::new(i.interaction_id.clone(), kind);
    out.create_time = time(i.create_time.as_ref());
    out
}

/// Takes the decoded event by value: its strings move into the model, uncopied (a watch
/// converts every event it receives).
pub(crate) fn event(e: p::RunEvent) -> m::RunEvent {
    use p::run_event::Payload;
    let payload = match e.payload {
        Some(Payload::StatusChanged(s)) => EventPayload::StatusChanged {
            previous_status: m::RunStatus::from_number(s.previous_status),
            status: m::RunStatus::from_number(s.status),
        },
        Some(Payload::OutputDelta(d)) => EventPayload::OutputDelta { text: d.text },
        Some(Payload::InteractionRequested(r)) => match &r.interaction {
            Some(i) => EventPayload::InteractionRequested(interaction(i)),
            None => EventPayload::Unknown,
        },
        Some(Payload::InteractionResolved(r)) => EventPayload::InteractionResolved {
            interaction_id: r.interaction_id,
            outcome: m::InteractionOutcome::from_number(r.outcome),
            choice: r.choice,
        },
        Some(Payload::ToolActivity(t)) => EventPayload::ToolActivity {
            activity_id: t.activity_id,
            action_class: m::ActionClass::from_number(t.action_class),
            display_category: t.display_category,
            phase: m::ToolActivityPhase::from_number(t.phase),
        },
        Some(Payload::Terminated(t)) => EventPayload::RunTerminated {
            status: m::RunStatus::from_number(t.status),
            result: t.result.as_ref().map(result),
        },
        None => EventPayload::Unknown,
    };
    let mut out = m::RunEvent::new(e.run_id, e.sequence, payload);
    out.event_time = time(e.event_time.as_ref());
    out
}

pub(crate) fn artifact(a: &p::Artifact) -> m::Artifact {
    let mut out = m::Artifact::new(
        a.artifact_id.clone(),
        a.media_type.clone(),
        a.size_bytes,
        a.sha256.clone(),
    );
    out.display_name = a.display_name.clone();
    out.create_time = time(a.create_time.as_ref());
    out
}

pub(crate) fn create_request(r: &m::CreateRunRequest) -> p::CreateRunRequest {
    p::CreateRunRequest {
        idempotency_key: r.idempotency_key().to_owned(),
        input: r
            .input()
            .iter()
            .map(|part| p::InputPart {
                kind: Some(match part {
                    InputPart::Text(t) => p::input_part::Kind::Text(t.clone()),
                    InputPart::Artifact { artifact_id, .. } => {
                        p::input_part::Kind::Artifact(p::ArtifactReference {
                            artifact_id: artifact_id.clone(),
                        })
                    }
                }),
            })
            .collect(),
        mode: r.mode().number(),
        research: r.research().map(|o| p::ResearchOptions {
            depth: o.depth,
            lanes: o.lanes.iter().map(|l| l.number()).collect(),
        }),
        role: r.role().to_owned(),
        max_turns: r.max_turns(),
        session_id: r.session_id().map(str::to_owned),
        end_user_id: r.end_user_id().map(str::to_owned),
        trace_context: r.traceparent().map(|tp| p::TraceContext {
            traceparent: tp.to_owned(),
            tracestate: r.tracestate().unwrap_or_default().to_owned(),
        }),
        selected_skills: Vec::new(),
        plan_action: r.plan_action().map(|a| p::PlanAction {
            source_run_id: a.source_run_id.clone(),
            revision: a.revision,
            kind: a.kind.number(),
        }),
    }
}

pub(crate) fn list_request(q: &m::ListRunsQuery) -> p::ListRunsRequest {
    let mut statuses: Vec<i32> = Vec::new();
    for s in q.status_filter() {
        if !statuses.contains(&s.number()) {
            statuses.push(s.number());
        }
    }
    p::ListRunsRequest {
        statuses,
        page_size: q.requested_page_size(),
        page_token: q.page_token().unwrap_or_default().to_owned(),
    }
}

pub(crate) fn respond_request(
    run_id: &str,
    interaction_id: &str,
    answer: &m::Answer,
) -> p::RespondInteractionRequest {
    use p::respond_interaction_request::Answer as A;
    p::RespondInteractionRequest {
        run_id: run_id.to_owned(),
        interaction_id: interaction_id.to_owned(),
        answer: Some(match answer {
            m::Answer::Prompt { choice } => A::Prompt(p::PromptAnswer {
                choice: choice.clone(),
            }),
            m::Answer::Approval { binding, decision } => A::Approval(p::ApprovalAnswer {
                binding: binding.clone(),
                decision: decision.number(),
            }),
        }),
    }
}

pub(crate) fn manifest(mf: &m::ArtifactManifest) -> p::ArtifactManifest {
    p::ArtifactManifest {
        media_type: mf.media_type.clone(),
        size_bytes: mf.size_bytes,
        sha256: mf.sha256.clone(),
        display_name: mf.display_name.clone(),
    }
}

#[cfg(test)]
mod tests;
