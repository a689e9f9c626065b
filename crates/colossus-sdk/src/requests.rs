//! Request checks run before anything is sent, on every backend: field grammars, the
//! worker's advertised limits and the capability gates (S4).

use std::collections::HashSet;

use crate::model::{
    Answer, ApprovalDecision, CreateRunRequest, InputPart, ListRunsQuery, RunMode, ServerInfo,
    capabilities,
};
use crate::{Error, Kind, Result, reasons};

const MAX_TRACESTATE_BYTES: usize = 512;

pub(crate) fn invalid_field(field: &str, message: impl Into<String>) -> Error {
    Error::local(Kind::InvalidArgument, reasons::FIELD_INVALID, message)
        .with_metadata("field", field)
}

fn limited(reason: &str, field: &str, limit: u64, message: String) -> Error {
    Error::local(Kind::InvalidArgument, reason, message)
        .with_metadata("field", field)
        .with_metadata("limit", limit.to_string())
}

/// S4: refuse locally what the worker does not advertise.
pub(crate) fn require_capability(info: &ServerInfo, capability: &str, what: &str) -> Result<()> {
    if info.has_capability(capability) {
        return Ok(());
    }
    Err(Error::local(
        Kind::CapabilityMissing,
        reasons::CAPABILITY_NOT_SUPPORTED,
        format!("{what} needs the {capability:?} capability, which this worker does not advertise"),
    )
    .with_metadata("capability", capability))
}

/// 1-64 of `[A-Za-z0-9_-]`: run, interaction, artifact and session IDs.
pub(crate) fn is_opaque_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub(crate) fn check_id(value: &str, field: &str) -> Result<()> {
    if is_opaque_id(value) {
        Ok(())
    } else {
        Err(invalid_field(
            field,
            format!("{field} must be 1-64 characters of [A-Za-z0-9_-]"),
        ))
    }
}

fn check_idempotency_key(key: &str) -> Result<()> {
    let ok = (1..=128).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Error::local(
        Kind::InvalidArgument,
        reasons::IDEMPOTENCY_KEY_INVALID,
        "idempotency_key must be 1-128 characters of [A-Za-z0-9._:-]",
    )
    .with_metadata("field", "idempotency_key"))
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check_trace_context(traceparent: &str, tracestate: &str) -> Result<()> {
    let parts: Vec<&str> = traceparent.split('-').collect();
    let ok = parts.len() == 4
        && parts[0] == "00"
        && parts[1].len() == 32
        && parts[2].len() == 16
        && parts[3].len() == 2
        && parts.iter().all(|p| is_lower_hex(p))
        && parts[1].bytes().any(|b| b != b'0')
        && parts[2].bytes().any(|b| b != b'0');
    if !ok {
        return Err(invalid_field(
            "traceparent",
            "traceparent must be a W3C version-00 traceparent",
        ));
    }
    if tracestate.len() > MAX_TRACESTATE_BYTES
        || !tracestate.bytes().all(|b| (0x20..=0x7e).contains(&b))
    {
        return Err(invalid_field(
            "tracestate",
            format!("tracestate must be printable ASCII of at most {MAX_TRACESTATE_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn check_input(parts: &[InputPart], info: &ServerInfo) -> Result<()> {
    let limits = &info.limits;
    if parts.is_empty() {
        return Err(invalid_field("input", "input needs at least one part"));
    }
    if limits.max_input_parts > 0 && parts.len() > limits.max_input_parts as usize {
        return Err(limited(
            reasons::INPUT_TOO_MANY_PARTS,
            "input",
            limits.max_input_parts.into(),
            format!(
                "input has {} parts; the worker accepts {}",
                parts.len(),
                limits.max_input_parts
            ),
        ));
    }
    let mut text_bytes = 0u64;
    for part in parts {
        match part {
            InputPart::Text(text) => text_bytes += text.len() as u64,
            InputPart::Artifact {
                artifact_id,
                media_type,
            } => {
                require_capability(info, capabilities::ARTIFACTS, "an artifact input part")?;
                if media_type
                    .as_deref()
                    .is_some_and(|t| t.to_ascii_lowercase().starts_with("image/"))
                {
                    require_capability(info, capabilities::IMAGE_INPUT, "an image input part")?;
                }
                check_id(artifact_id, "input.artifact.artifact_id")?;
            }
        }
    }
    if limits.max_input_bytes > 0 && text_bytes > limits.max_input_bytes {
        return Err(limited(
            reasons::INPUT_TOO_LARGE,
            "input",
            limits.max_input_bytes,
            format!(
                "input text is {text_bytes} bytes; the worker accepts {}",
                limits.max_input_bytes
            ),
        ));
    }
    Ok(())
}

/// Every check of a create; the caller adds the idempotency key to the error.
pub(crate) fn check_create(request: &CreateRunRequest, info: &ServerInfo) -> Result<()> {
    check_idempotency_key(&request.idempotency_key)?;
    check_input(&request.input, info)?;
    match request.mode {
        RunMode::Execute | RunMode::Plan => {
            if request.research.is_some() {
                return Err(invalid_field(
                    "research",
                    "research options are only for research runs",
                ));
            }
        }
        RunMode::Research => {
            require_capability(info, capabilities::RESEARCH, "a research run")?;
            let Some(r) = &request.research else {
                return Err(invalid_field(
                    "research",
                    "a research run needs research options",
                ));
            };
            if !(1..=5).contains(&r.depth) {
                return Err(invalid_field(
                    "research.depth",
                    "research depth must be between 1 and 5",
                ));
            }
            let mut seen = HashSet::new();
            let lanes_ok =
                !r.lanes.is_empty() && r.lanes.iter().all(|l| l.number() != 0 && seen.insert(*l));
            if !lanes_ok {
                return Err(invalid_field(
                    "research.lanes",
                    "research lanes must be distinct, known and non-empty",
                ));
            }
        }
        other => {
            return Err(invalid_field(
                "mode",
                format!("mode {other} is not a run mode"),
            ));
        }
    }
    let limit = info.limits.max_turns;
    if limit > 0 && request.max_turns > limit {
        return Err(limited(
            reasons::MAX_TURNS_OUT_OF_RANGE,
            "max_turns",
            limit.into(),
            format!("max_turns must be between 0 and {limit}"),
        ));
    }
    if let Some(id) = &request.session_id {
        check_id(id, "session_id")?;
    }
    if let Some(id) = &request.end_user_id {
        let ok = (1..=128).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:@+-".contains(&b));
        if !ok {
            return Err(invalid_field(
                "end_user_id",
                "end_user_id must be 1-128 characters of [A-Za-z0-9._:@+-]",
            ));
        }
    }
    if let Some(action) = &request.plan_action {
        // An older worker would ignore the unknown field and start an ordinary run.
        require_capability(info, capabilities::PLANS_CONTINUE, "a plan action")?;
        if action.kind.number() == 0 {
            return Err(invalid_field(
                "plan_action.kind",
                "plan_action.kind must be REVISE, EXECUTE_DIRECT or EXECUTE_GOAL",
            ));
        }
        check_id(&action.source_run_id, "plan_action.source_run_id")?;
    }
    if let Some(tp) = &request.traceparent {
        check_trace_context(tp, request.tracestate.as_deref().unwrap_or(""))?;
    } else if request.tracestate.is_some() {
        return Err(invalid_field(
            "tracestate",
            "tracestate needs a traceparent",
        ));
    }
    Ok(())
}

pub(crate) fn check_list(query: &ListRunsQuery, info: &ServerInfo) -> Result<()> {
    let mut seen = HashSet::new();
    for s in &query.statuses {
        if s.number() == 0 {
            return Err(invalid_field(
                "statuses",
                format!("status {s} is not a run status"),
            ));
        }
        seen.insert(*s);
    }
    let limit = info.limits.max_list_status_filters;
    if limit > 0 && seen.len() > limit as usize {
        return Err(limited(
            reasons::STATUS_FILTER_TOO_LARGE,
            "statuses",
            limit.into(),
            format!("at most {limit} status filters are accepted"),
        ));
    }
    Ok(())
}

pub(crate) fn check_respond(run_id: &str, interaction_id: &str, answer: &Answer) -> Result<()> {
    check_id(run_id, "run_id")?;
    check_id(interaction_id, "interaction_id")?;
    if let Answer::Approval { decision, .. } = answer
        && !matches!(decision, ApprovalDecision::Approve | ApprovalDecision::Deny)
    {
        return Err(invalid_field(
            "decision",
            "decision must be APPROVE or DENY",
        ));
    }
    Ok(())
}

pub(crate) fn check_media_type(media_type: &str) -> Result<()> {
    let token = |s: &str| {
        let mut b = s.bytes();
        b.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&c))
    };
    let ok = media_type.len() <= 127
        && media_type
            .split_once('/')
            .is_some_and(|(t, s)| token(t) && token(s));
    if ok {
        Ok(())
    } else {
        Err(invalid_field(
            "media_type",
            "media_type must look like type/subtype (at most 127 characters)",
        ))
    }
}

pub(crate) fn check_display_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 255 || name.contains(['/', '\\', '\0']) {
        return Err(invalid_field(
            "display_name",
            "display_name must be 1-255 bytes with no path separators",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
