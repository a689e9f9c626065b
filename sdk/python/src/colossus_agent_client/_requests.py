"""Validation and construction of every request, shared by the sync and async clients.

Everything the SDK can refuse locally is refused here, with a typed error, before a byte
reaches the socket: grammars, the worker's advertised limits and capability gates (S4).
The request cap (C7) is the exception: it is checked where every request leaves, in
``_request_cap.py``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from typing import Final

from . import _models as m
from ._errors import CapabilityMissingError, InvalidArgumentError, ResourceExhaustedError
from ._transport._descriptor import is_opaque_id, is_pin
from .api.v1alpha1 import artifacts_pb2, run_service_pb2, runs_pb2

_IDEMPOTENCY_KEY_RE: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_END_USER_RE: Final = re.compile(r"[A-Za-z0-9._:@+-]{1,128}")
_TRACEPARENT_RE: Final = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")
_MEDIA_TYPE_RE: Final = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*"
)
_MAX_TRACESTATE_BYTES: Final = 512

CAP_ARTIFACTS: Final = "artifacts"
CAP_IMAGE_INPUT: Final = "attachments.image_input"
CAP_PLANS_CONTINUE: Final = "plans.continue"
CAP_RESEARCH: Final = "research"

InputLike = str | m.TextPart | m.ArtifactPart | m.Artifact
Answer = m.PromptAnswer | m.ApprovalAnswer


def _invalid(message: str, field: str) -> InvalidArgumentError:
    return InvalidArgumentError(message, reason="FIELD_INVALID", metadata={"field": field})


def new_idempotency_key() -> str:
    """A fresh key in the contract's grammar, generated once per ``create`` call."""
    return f"py-{uuid.uuid4()}"


def check_idempotency_key(key: str) -> str:
    if not isinstance(key, str) or _IDEMPOTENCY_KEY_RE.fullmatch(key) is None:
        raise InvalidArgumentError(
            "idempotency_key must be 1-128 characters of [A-Za-z0-9._:-]",
            reason="IDEMPOTENCY_KEY_INVALID",
            metadata={"field": "idempotency_key"},
        )
    return key


def check_id(value: str, field: str) -> str:
    if not is_opaque_id(value):
        raise _invalid(f"{field} must be 1-64 characters of [A-Za-z0-9_-]", field)
    return value


def check_trace_context(traceparent: str, tracestate: str | None) -> None:
    match = _TRACEPARENT_RE.fullmatch(traceparent)
    if match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}:
        raise _invalid("traceparent must be a W3C version-00 traceparent", "traceparent")
    if tracestate is not None and (
        len(tracestate.encode("utf-8")) > _MAX_TRACESTATE_BYTES
        or not tracestate.isascii()
        or any(c in tracestate for c in "\r\n")
    ):
        raise _invalid("tracestate must be printable ASCII of at most 512 bytes", "tracestate")


def require_capability(info: m.ServerInfo, capability: str, what: str) -> None:
    """S4: refuse locally when the worker does not advertise ``capability``."""
    if capability not in info.capabilities:
        raise CapabilityMissingError(
            f"{what} needs the {capability!r} capability, which this worker does not advertise",
            reason="CAPABILITY_NOT_SUPPORTED",
            metadata={"capability": capability},
        )


def _input_parts(parts: Sequence[InputLike], info: m.ServerInfo) -> list[runs_pb2.InputPart]:
    limits = info.limits
    if not parts:
        raise _invalid("input needs at least one part", "input")
    if limits.max_input_parts and len(parts) > limits.max_input_parts:
        raise InvalidArgumentError(
            f"input has {len(parts)} parts; the worker accepts {limits.max_input_parts}",
            reason="INPUT_TOO_MANY_PARTS",
            metadata={"field": "input", "limit": str(limits.max_input_parts)},
        )
    result: list[runs_pb2.InputPart] = []
    text_bytes = 0
    for given in parts:
        part = m.TextPart(given) if isinstance(given, str) else given
        if isinstance(part, m.TextPart):
            text_bytes += len(part.text.encode("utf-8"))
            result.append(runs_pb2.InputPart(text=part.text))
            continue
        if isinstance(part, m.Artifact):
            part = m.ArtifactPart(part.artifact_id, part.media_type)
        if not isinstance(part, m.ArtifactPart):
            raise _invalid(f"unsupported input part {type(part).__name__}", "input")
        require_capability(info, CAP_ARTIFACTS, "an artifact input part")
        if part.media_type is not None and part.media_type.lower().startswith("image/"):
            require_capability(info, CAP_IMAGE_INPUT, "an image input part")
        check_id(part.artifact_id, "input.artifact.artifact_id")
        result.append(
            runs_pb2.InputPart(artifact=runs_pb2.ArtifactReference(artifact_id=part.artifact_id))
        )
    if limits.max_input_bytes and text_bytes > limits.max_input_bytes:
        raise InvalidArgumentError(
            f"input text is {text_bytes} bytes; the worker accepts {limits.max_input_bytes}",
            reason="INPUT_TOO_LARGE",
            metadata={"field": "input", "limit": str(limits.max_input_bytes)},
        )
    return result


def build_create_run(
    info: m.ServerInfo,
    *,
    idempotency_key: str,
    input: Sequence[InputLike] | str,
    mode: m.RunMode,
    research: m.ResearchOptions | None,
    role: str | None,
    max_turns: int,
    session_id: str | None,
    end_user_id: str | None,
    plan_action: m.PlanAction | None,
    trace: tuple[str, str | None] | None,
) -> run_service_pb2.CreateRunRequest:
    check_idempotency_key(idempotency_key)
    parts = _input_parts([input] if isinstance(input, str) else list(input), info)
    request = run_service_pb2.CreateRunRequest(idempotency_key=idempotency_key, input=parts)
    if mode is m.RunMode.UNSPECIFIED:
        mode = m.RunMode.EXECUTE
    request.mode = runs_pb2.RunMode.ValueType(mode.value)
    if mode is m.RunMode.RESEARCH:
        require_capability(info, CAP_RESEARCH, "a research run")
        if research is None:
            raise _invalid("a research run needs research options", "research")
        if not 1 <= research.depth <= 5:
            raise _invalid("research depth must be between 1 and 5", "research.depth")
        lanes = list(research.lanes)
        if not lanes or len(set(lanes)) != len(lanes) or m.EvidenceLane.UNSPECIFIED in lanes:
            raise _invalid("research lanes must be distinct, known and non-empty", "research.lanes")
        request.research.depth = research.depth
        request.research.lanes.extend(runs_pb2.EvidenceLane.ValueType(lane.value) for lane in lanes)
    elif research is not None:
        raise _invalid("research options are only for research runs", "research")
    if role:
        request.role = role
    limit = info.limits.max_turns
    if not isinstance(max_turns, int) or max_turns < 0 or (limit and max_turns > limit):
        raise InvalidArgumentError(
            f"max_turns must be between 0 and {limit or 'the worker limit'}",
            reason="MAX_TURNS_OUT_OF_RANGE",
            metadata={"field": "max_turns", "limit": str(limit)},
        )
    request.max_turns = max_turns
    if session_id is not None:
        request.session_id = check_id(session_id, "session_id")
    if end_user_id is not None:
        if _END_USER_RE.fullmatch(end_user_id) is None:
            raise _invalid(
                "end_user_id must be 1-128 characters of [A-Za-z0-9._:@+-]", "end_user_id"
            )
        request.end_user_id = end_user_id
    if plan_action is not None:
        # An older worker would ignore the unknown field and start an ordinary run.
        require_capability(info, CAP_PLANS_CONTINUE, "a plan action")
        if plan_action.kind is m.PlanActionKind.UNSPECIFIED:
            raise _invalid("plan_action.kind must be set", "plan_action.kind")
        request.plan_action.source_run_id = check_id(
            plan_action.source_run_id, "plan_action.source_run_id"
        )
        request.plan_action.revision = plan_action.revision
        request.plan_action.kind = runs_pb2.PlanActionKind.ValueType(plan_action.kind.value)
    if trace is not None:
        traceparent, tracestate = trace
        check_trace_context(traceparent, tracestate)
        request.trace_context.traceparent = traceparent
        if tracestate:
            request.trace_context.tracestate = tracestate
    return request


def build_list_runs(
    info: m.ServerInfo, statuses: Iterable[m.RunStatus], page_size: int
) -> run_service_pb2.ListRunsRequest:
    wanted = sorted({s.value for s in statuses})
    if 0 in wanted:
        raise _invalid("statuses cannot contain UNSPECIFIED", "statuses")
    cap = info.limits.max_list_status_filters
    if cap and len(wanted) > cap:
        raise InvalidArgumentError(
            f"at most {cap} status filters are accepted",
            reason="STATUS_FILTER_TOO_LARGE",
            metadata={"field": "statuses", "limit": str(cap)},
        )
    if page_size < 0:
        raise _invalid("page_size cannot be negative", "page_size")
    return run_service_pb2.ListRunsRequest(
        statuses=[runs_pb2.RunStatus.ValueType(v) for v in wanted], page_size=page_size
    )


def build_respond(
    info: m.ServerInfo, run_id: str, interaction_id: str, answer: Answer
) -> run_service_pb2.RespondInteractionRequest:
    request = run_service_pb2.RespondInteractionRequest(
        run_id=check_id(run_id, "run_id"), interaction_id=check_id(interaction_id, "interaction_id")
    )
    if isinstance(answer, m.PromptAnswer):
        request.prompt.choice = answer.choice
    elif isinstance(answer, m.ApprovalAnswer):
        request.approval.binding = answer.binding
        request.approval.decision = run_service_pb2.ApprovalDecision.ValueType(
            answer.decision.value
        )
    else:
        raise _invalid("answer must be a PromptAnswer or an ApprovalAnswer", "answer")
    return request


def check_manifest(
    info: m.ServerInfo, *, size: int, sha256: str, media_type: str, display_name: str | None
) -> artifacts_pb2.ArtifactManifest:
    require_capability(info, CAP_ARTIFACTS, "an artifact upload")
    cap = info.limits.max_artifact_bytes
    if size > cap:
        raise ResourceExhaustedError(
            f"the artifact is {size} bytes; the worker accepts {cap}",
            reason="ARTIFACT_TOO_LARGE",
            metadata={"limit": str(cap)},
        )
    if len(media_type) > 127 or _MEDIA_TYPE_RE.fullmatch(media_type) is None:
        raise _invalid(
            "media_type must look like type/subtype (at most 127 characters)", "media_type"
        )
    if display_name is not None and (
        not display_name
        or len(display_name.encode("utf-8")) > 255
        or "/" in display_name
        or "\\" in display_name
        or "\x00" in display_name
    ):
        raise _invalid("display_name must be 1-255 bytes with no path separators", "display_name")
    if not is_pin(sha256):
        raise _invalid("sha256 must be 64 lower-case hex characters", "sha256")
    return artifacts_pb2.ArtifactManifest(
        media_type=media_type, size_bytes=size, sha256=sha256, display_name=display_name or ""
    )
