"""Turns stored run data into the generated protobuf messages."""

from __future__ import annotations

import datetime
from typing import Any

from .._gen.colossus.api.v1alpha1 import (
    ActionClass,
    Approval,
    Citation,
    EvidenceLane,
    InputPart,
    Interaction,
    InteractionOutcome,
    InteractionRequested,
    InteractionResolved,
    OutputDelta,
    PlanResult,
    PlanStatus,
    Prompt,
    ResearchResult,
    Run,
    RunEvent,
    RunFailure,
    RunMode,
    RunResult,
    RunStatus,
    RunTerminated,
    StatusChanged,
    ToolActivity,
    ToolActivityPhase,
)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def timestamp(us: int) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(microseconds=us)


def interaction(data: dict[str, Any]) -> Interaction:
    msg = Interaction(interaction_id=data["id"], create_time=timestamp(data["create_time"]))
    if data["kind"] == "prompt":
        msg.prompt = Prompt(question=data["question"], choices=list(data["choices"]))
    else:
        approval = Approval(
            action_class=ActionClass[data["action_class"]], binding=data["binding"]
        )
        if data.get("origin"):
            approval.origin = data["origin"]
        else:
            approval.display_category = data["display_category"]
        msg.approval = approval
    return msg


def result(data: dict[str, Any]) -> RunResult:
    msg = RunResult(output_text=data.get("output_text", ""))
    if data.get("plan"):
        plan = data["plan"]
        msg.plan = PlanResult(
            plan_id=plan["plan_id"], revision=plan["revision"], status=PlanStatus[plan["status"]]
        )
    if data.get("research"):
        research = data["research"]
        msg.research = ResearchResult(
            report=research["report"],
            citations=[
                Citation(lane=EvidenceLane[c["lane"]], label=c["label"], url=c.get("url", ""))
                for c in research["citations"]
            ],
        )
    if data.get("failure"):
        msg.failure = RunFailure(code=data["failure"]["code"], message=data["failure"]["message"])
    return msg


def run(creation: dict[str, Any], state: dict[str, Any]) -> Run:
    msg = Run(
        run_id=creation["run_id"],
        session_id=creation["session_id"],
        mode=RunMode[creation["mode"]],
        role=creation["role"],
        status=RunStatus[state["status"]],
        last_sequence=state["last_sequence"],
        create_time=timestamp(creation["create_time"]),
        update_time=timestamp(state["update_time"]),
        idempotency_key=creation["idempotency_key"],
        max_turns=creation["max_turns"],
    )
    if creation.get("end_user_id") is not None:
        msg.end_user_id = creation["end_user_id"]
    if state["pending"] is not None and state["status"] == "WAITING_FOR_INPUT":
        msg.pending_interaction = interaction(state["pending"])
    if state["result"] is not None:
        msg.result = result(state["result"])
    return msg


def event(run_id: str, payload: dict[str, Any]) -> RunEvent:
    data = payload["event"]
    msg = RunEvent(run_id=run_id, sequence=payload["seq"], event_time=timestamp(payload["time"]))
    kind = data["type"]
    if kind == "status":
        msg.status_changed = StatusChanged(
            previous_status=RunStatus[data["previous"]], status=RunStatus[data["status"]]
        )
    elif kind == "output":
        msg.output_delta = OutputDelta(text=data["text"])
    elif kind == "interaction_requested":
        msg.interaction_requested = InteractionRequested(interaction=interaction(data["interaction"]))
    elif kind == "interaction_resolved":
        msg.interaction_resolved = InteractionResolved(
            interaction_id=data["interaction_id"],
            outcome=InteractionOutcome[data["outcome"]],
            choice=data.get("choice", ""),
        )
    elif kind == "tool":
        msg.tool_activity = ToolActivity(
            activity_id=data["activity_id"],
            action_class=ActionClass[data["action_class"]],
            display_category=data["display_category"],
            phase=ToolActivityPhase[data["phase"]],
        )
    elif kind == "terminated":
        msg.terminated = RunTerminated(status=RunStatus[data["status"]], result=result(data["result"]))
    return msg


def input_part_json(part: InputPart) -> dict[str, Any]:
    if part.artifact is not None:
        return {"artifact_id": part.artifact.artifact_id}
    return {"text": part.text or ""}
