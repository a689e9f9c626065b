"""Views: SDK objects as the plain JSON of the client protocol."""

from __future__ import annotations

import hashlib
from typing import Any

import colossus_agent_client as colossus


def enum_name(value: Any) -> Any:
    return value.name if value is not None and hasattr(value, "name") else value


def interaction_view(i: colossus.Interaction | None) -> dict[str, Any] | None:
    if i is None:
        return None
    view: dict[str, Any] = {"interaction_id": i.interaction_id}
    if i.prompt is not None:
        view.update(kind="prompt", question=i.prompt.question, choices=list(i.prompt.choices))
    elif i.approval is not None:
        a = i.approval
        view.update(
            kind="approval",
            action_class=enum_name(a.action_class),
            display_category=a.display_category,
            origin=a.origin,
            binding=a.binding,
        )
    return view


def run_view(r: colossus.Run) -> dict[str, Any]:
    result = None
    if r.result is not None:
        result = {
            "output_text": r.result.output_text,
            "failure_code": r.result.failure.code if r.result.failure else None,
            "plan": (
                {
                    "plan_id": r.result.plan.plan_id,
                    "revision": r.result.plan.revision,
                    "status": enum_name(r.result.plan.status),
                }
                if r.result.plan
                else None
            ),
        }
    return {
        "run_id": r.run_id,
        "session_id": r.session_id,
        "mode": enum_name(r.mode),
        "role": r.role,
        "status": enum_name(r.status),
        "last_sequence": r.last_sequence,
        "idempotency_key": r.idempotency_key,
        "end_user_id": r.end_user_id,
        "max_turns": r.max_turns,
        "pending_interaction": interaction_view(r.pending_interaction),
        "result": result,
    }


def event_view(e: colossus.RunEvent) -> dict[str, Any]:
    view: dict[str, Any] = {"run_id": e.run_id, "sequence": e.sequence}
    p = e.payload
    if isinstance(p, colossus.StatusChanged):
        view.update(
            kind="status_changed", previous_status=enum_name(p.previous_status), status=enum_name(p.status)
        )
    elif isinstance(p, colossus.OutputDelta):
        view.update(kind="output_delta", text=p.text)
    elif isinstance(p, colossus.InteractionRequested):
        view.update(kind="interaction_requested", interaction=interaction_view(p.interaction))
    elif isinstance(p, colossus.InteractionResolved):
        view.update(
            kind="interaction_resolved",
            interaction_id=p.interaction_id,
            outcome=enum_name(p.outcome),
            choice=p.choice,
        )
    elif isinstance(p, colossus.ToolActivity):
        view.update(
            kind="tool_activity",
            action_class=enum_name(p.action_class),
            display_category=p.display_category,
            phase=enum_name(p.phase),
        )
    elif isinstance(p, colossus.RunTerminated):
        view.update(kind="terminated", terminal_status=enum_name(p.status))
    else:
        view.update(kind="unknown")
    return view


def server_info_view(s: colossus.ServerInfo) -> dict[str, Any]:
    limits = {name: getattr(s.limits, name) for name in s.limits.__dataclass_fields__}
    # Protocol names are the proto field names; durations are in seconds.
    limits["handshake_timeout"] = limits.pop("handshake_timeout_seconds")
    limits["max_connection_age"] = limits.pop("max_connection_age_seconds")
    for bucket in ("create_rate", "create_rate_per_application"):
        b = limits[bucket]
        limits[bucket] = {"refill_per_second": b.refill_per_second, "burst": b.burst}
    return {
        "instance_id": s.instance_id,
        "api_package": s.api_package,
        "api_version": s.api_version,
        "api_major": s.api_major,
        "deployment_mode": enum_name(s.deployment_mode),
        "capabilities": sorted(s.capabilities),
        "limits": limits,
    }


def artifact_view(a: colossus.Artifact) -> dict[str, Any]:
    return {
        "artifact_id": a.artifact_id,
        "media_type": a.media_type,
        "size_bytes": a.size_bytes,
        "sha256": a.sha256,
        "display_name": a.display_name,
    }


def created_view(created: Any) -> dict[str, Any]:
    return {
        "run": run_view(created.run),
        "replayed": created.replayed,
        "idempotency_key": created.idempotency_key,
    }


def downloaded_view(downloaded: Any) -> dict[str, Any]:
    return {
        "artifact": artifact_view(downloaded.artifact),
        "size": len(downloaded.data),
        "sha256": hashlib.sha256(downloaded.data).hexdigest(),
    }
