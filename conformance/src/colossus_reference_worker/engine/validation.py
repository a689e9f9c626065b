"""Validation of CreateRun requests (W7) and their idempotency fingerprint (W6)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grpclib.const import Status

from .._gen.colossus.api.v1alpha1 import (
    CreateRunRequest,
    EvidenceLane,
    PlanActionKind,
    RunMode,
)
from ..config import Limits
from ..credentials import Principal
from ..errors import ApiError, invalid
from ..journal.records import canonical_json
from ..runtime.script import ScriptError, is_script, parse

IDEMPOTENCY_KEY = re.compile(r"[A-Za-z0-9._:-]{1,128}")
OPAQUE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
END_USER_ID = re.compile(r"[A-Za-z0-9._:@+-]{1,128}")
TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")

# Looks an artifact up for the calling application: its media type, or None.
ArtifactLookup = Callable[[str, str], "str | None"]


@dataclass
class ValidRequest:
    """A CreateRun request that passed every syntactic check."""

    fields: dict[str, Any]
    fingerprint: str


def _enum_name(enum: Any, value: int, field: str) -> str:
    """The member name of a known enum value; unknown numbers are refused."""
    member = enum.__members__.get(getattr(value, "name", None) or "")
    if member is None or int(member) != int(value):
        known = {int(m): name for name, m in enum.__members__.items()}
        if int(value) not in known:
            raise invalid(field, f"{field} has an unknown value")
        return str(known[int(value)])
    return str(member.name)


def validate_create(
    req: CreateRunRequest,
    principal: Principal,
    limits: Limits,
    capabilities: list[str],
    lookup_artifact: ArtifactLookup | None,
) -> ValidRequest:
    if not IDEMPOTENCY_KEY.fullmatch(req.idempotency_key):
        raise ApiError(
            Status.INVALID_ARGUMENT,
            "IDEMPOTENCY_KEY_INVALID",
            "the idempotency key must be 1-128 characters of [A-Za-z0-9._:-]",
            {"field": "idempotency_key"},
        )
    if req.selected_skills:
        raise ApiError(
            Status.INVALID_ARGUMENT,
            "SKILLS_NOT_SUPPORTED",
            "skills cannot be selected through this API version",
            {"field": "selected_skills"},
        )
    if len(req.input) > limits.max_input_parts:
        raise ApiError(
            Status.INVALID_ARGUMENT,
            "INPUT_TOO_MANY_PARTS",
            f"at most {limits.max_input_parts} input parts are accepted",
            {"field": "input", "limit": "max_input_parts"},
        )
    if not req.input:
        raise invalid("input", "at least one input part is required")
    parts: list[dict[str, Any]] = []
    text_bytes = 0
    for index, part in enumerate(req.input):
        field = f"input[{index}]"
        if part.artifact is not None:
            if "artifacts" not in capabilities:
                raise ApiError(
                    Status.FAILED_PRECONDITION,
                    "CAPABILITY_NOT_SUPPORTED",
                    "artifact input needs the artifacts capability",
                    {"capability": "artifacts"},
                )
            artifact_id = part.artifact.artifact_id
            media = (
                lookup_artifact(principal.application_id, artifact_id)
                if lookup_artifact is not None and OPAQUE_ID.fullmatch(artifact_id)
                else None
            )
            if media is None:
                raise ApiError(
                    Status.NOT_FOUND, "ARTIFACT_NOT_FOUND", "artifact not found", {"field": field}
                )
            image = media.startswith("image/")
            if image and "attachments.image_input" not in capabilities:
                raise ApiError(
                    Status.INVALID_ARGUMENT,
                    "ARTIFACT_NOT_ACCEPTED",
                    "image input is not enabled on this worker",
                    {"field": field, "capability": "attachments.image_input"},
                )
            if not image and not (media.startswith("text/") or media == "application/json"):
                raise ApiError(
                    Status.INVALID_ARGUMENT,
                    "ARTIFACT_NOT_ACCEPTED",
                    "this artifact's media type cannot be used as run input",
                    {"field": field},
                )
            parts.append({"artifact_id": artifact_id, "media_type": media})
        elif part.text is not None:
            text_bytes += len(part.text.encode())
            if text_bytes > limits.max_input_bytes:
                raise ApiError(
                    Status.INVALID_ARGUMENT,
                    "INPUT_TOO_LARGE",
                    f"input text exceeds {limits.max_input_bytes} bytes",
                    {"field": "input", "limit": "max_input_bytes"},
                )
            parts.append({"text": part.text})
        else:
            raise invalid(field, "an input part must carry text or an artifact")
    first_text = next((p["text"] for p in parts if "text" in p), None)
    if first_text is not None and is_script(first_text):
        try:
            parse(first_text)
        except ScriptError as exc:
            raise invalid("input[0].text", f"script error: {exc}") from None

    mode = _enum_name(RunMode, req.mode, "mode")
    mode = "EXECUTE" if mode == "UNSPECIFIED" else mode
    research = None
    if mode == "RESEARCH":
        if "research" not in capabilities:
            raise ApiError(
                Status.FAILED_PRECONDITION, "CAPABILITY_NOT_SUPPORTED",
                "research runs are not supported", {"capability": "research"},
            )
        if req.research is None:
            raise invalid("research", "a research run needs research options")
        if not 1 <= req.research.depth <= 5:
            raise invalid("research.depth", "research depth must be 1 to 5")
        lanes = [_enum_name(EvidenceLane, lane, "research.lanes") for lane in req.research.lanes]
        if not lanes or "UNSPECIFIED" in lanes or len(set(lanes)) != len(lanes):
            raise invalid("research.lanes", "lanes must be non-empty, known and unique")
        research = {"depth": req.research.depth, "lanes": lanes}
    elif req.research is not None:
        raise invalid("research", "research options are only allowed for research runs")

    if req.max_turns > limits.max_turns:
        raise ApiError(
            Status.INVALID_ARGUMENT,
            "MAX_TURNS_OUT_OF_RANGE",
            f"max_turns must be at most {limits.max_turns}",
            {"field": "max_turns", "limit": "max_turns"},
        )
    if req.session_id is not None and not OPAQUE_ID.fullmatch(req.session_id):
        raise invalid("session_id", "session_id must be 1-64 characters of [A-Za-z0-9_-]")
    if req.end_user_id is not None and not END_USER_ID.fullmatch(req.end_user_id):
        raise invalid("end_user_id", "end_user_id must be 1-128 characters of [A-Za-z0-9._:@+-]")
    trace = req.trace_context
    if trace is not None:
        match = TRACEPARENT.fullmatch(trace.traceparent) if trace.traceparent else None
        if trace.traceparent and (
            match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}
        ):
            raise invalid("trace_context.traceparent", "traceparent is not a version 00 value")
        if len(trace.tracestate.encode()) > 512:
            raise invalid("trace_context.tracestate", "tracestate exceeds 512 bytes")

    roles = principal.grant.roles
    if req.role:
        if req.role not in roles:
            raise ApiError(
                Status.PERMISSION_DENIED, "ROLE_NOT_GRANTED", "the role is not granted",
                {"field": "role"},
            )
        role = req.role
    elif roles:
        role = roles[0]
    else:
        raise ApiError(
            Status.PERMISSION_DENIED, "ROLE_NOT_GRANTED", "the credential grants no role",
            {"field": "role"},
        )

    plan_action = None
    if req.plan_action is not None:
        if "plans.continue" not in capabilities:
            raise ApiError(
                Status.FAILED_PRECONDITION, "CAPABILITY_NOT_SUPPORTED",
                "plan continuation is not supported", {"capability": "plans.continue"},
            )
        kind = _enum_name(PlanActionKind, req.plan_action.kind, "plan_action.kind")
        if kind == "UNSPECIFIED":
            raise invalid("plan_action.kind", "plan_action.kind is required")
        if (kind == "REVISE") != (mode == "PLAN"):
            raise invalid("plan_action.kind", "REVISE needs a PLAN run, execute kinds an EXECUTE run")
        if not OPAQUE_ID.fullmatch(req.plan_action.source_run_id):
            raise ApiError(Status.NOT_FOUND, "RUN_NOT_FOUND", "run not found",
                           {"field": "plan_action.source_run_id"})
        plan_action = {
            "source_run_id": req.plan_action.source_run_id,
            "revision": req.plan_action.revision,
            "kind": kind,
        }

    fields = {
        "input": parts,
        "mode": mode,
        "research": research,
        "role": role,
        "max_turns": req.max_turns or limits.default_max_turns,
        "session_id": req.session_id,
        "end_user_id": req.end_user_id,
        "plan_action": plan_action,
        "idempotency_key": req.idempotency_key,
    }
    # Everything the caller sent except the trace context, as sent.
    fingerprint_source = {
        "input": parts,
        "mode": mode,
        "research": research,
        "role": req.role,
        "max_turns": req.max_turns,
        "session_id": req.session_id,
        "end_user_id": req.end_user_id,
        "plan_action": plan_action,
        "selected_skills": list(req.selected_skills),
    }
    fingerprint = hashlib.sha256(canonical_json(fingerprint_source).encode()).hexdigest()
    return ValidRequest(fields, fingerprint)
