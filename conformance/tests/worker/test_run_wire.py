"""The directly encoded GetRun reply equals the generated classes' bytes."""

from __future__ import annotations

import pytest

from colossus_reference_worker._gen.colossus.api.v1alpha1 import GetRunResponse
from colossus_reference_worker.engine import views
from colossus_reference_worker.engine.model import initial_state
from colossus_reference_worker.engine.run_wire import encode_run_reply

CREATE_TIME = 1_795_990_785_123_456

CREATIONS = {
    "plain": {"run_id": "run_abc", "session_id": "ses_1", "mode": "EXECUTE", "role": "default",
              "idempotency_key": "k-1", "max_turns": 8, "end_user_id": None,
              "create_time": CREATE_TIME},
    "end-user": {"run_id": "run_é", "session_id": "ses_2", "mode": "PLAN", "role": "reviewer",
                 "idempotency_key": "k-2", "max_turns": 1, "end_user_id": "user-7",
                 "create_time": 0},
    "empty-end-user": {"run_id": "run_x", "session_id": "s", "mode": "RESEARCH", "role": "r",
                       "idempotency_key": "k", "max_turns": 300, "end_user_id": "",
                       "create_time": CREATE_TIME},
}


def _state(**changes: object) -> dict[str, object]:
    state = initial_state(CREATE_TIME)
    state.update(changes)
    return state


PROMPT = {"id": "ix_4", "create_time": CREATE_TIME + 5, "kind": "prompt",
          "question": "Which?", "choices": ["main", "release"]}
APPROVAL = {"id": "ix_9", "create_time": CREATE_TIME + 9, "kind": "approval",
            "action_class": "WRITE", "binding": "bnd_x", "display_category": "files"}

STATES = {
    "queued": _state(),
    "running": _state(status="RUNNING", last_sequence=300, update_time=CREATE_TIME + 999_999),
    "waiting-prompt": _state(status="WAITING_FOR_INPUT", last_sequence=3, pending=PROMPT),
    "waiting-approval": _state(status="WAITING_FOR_INPUT", last_sequence=9, pending=APPROVAL),
    "cancelling-with-pending": _state(status="CANCELLING", last_sequence=9, pending=PROMPT),
    "succeeded": _state(status="SUCCEEDED", last_sequence=4099,
                        result={"output_text": "héllo\nworld"}),
    "succeeded-empty": _state(status="SUCCEEDED", last_sequence=2, result={"output_text": ""}),
    "failed": _state(status="FAILED", last_sequence=5, result={
        "output_text": "", "failure": {"code": "event_limit", "message": "too many"}}),
    "plan": _state(status="SUCCEEDED", last_sequence=4, result={
        "output_text": "draft", "plan": {"plan_id": "plan_1", "revision": 2, "status": "DRAFT"}}),
    "research": _state(status="SUCCEEDED", last_sequence=6, result={
        "output_text": "", "research": {"report": "r", "citations": [
            {"lane": "WEB", "label": "a", "url": "https://example.test/"},
            {"lane": "REPOSITORY", "label": "b"}]}}),
}


@pytest.mark.parametrize("creation", sorted(CREATIONS))
@pytest.mark.parametrize("state", sorted(STATES))
def test_direct_run_encoding_matches_generated_classes(creation: str, state: str) -> None:
    c, s = CREATIONS[creation], STATES[state]
    assert encode_run_reply(c, s) == bytes(GetRunResponse(run=views.run(c, s)))
