"""Direct protobuf encoding of the ``Run`` that GetRun returns.

A client polling a run while it is produced gets a new state on nearly every
call, so the reply cannot be cached; the generated classes spend most of a
GetRun's handler time serialising it. The flat fields are written straight to
protobuf bytes here; the pending interaction and the rarer parts of a result
(plan, research) still go through the generated classes. The output is
byte-for-byte what ``GetRunResponse(run=views.run(...))`` produces (see
``tests/worker/test_run_wire.py``).
"""

from __future__ import annotations

from typing import Any

from .._gen.colossus.api.v1alpha1 import RunMode, RunStatus
from ..wire import protowire
from . import views
from .model import State

# Local names: every GetRun calls these a dozen times.
_bytes = protowire.length_delimited
_str = protowire.string
_uint = protowire.uint
_timestamp = protowire.timestamp


def _result(data: dict[str, Any]) -> bytes:
    if data.get("plan") or data.get("research"):
        return bytes(views.result(data))
    out = _str(1, data.get("output_text", ""))
    failure = data.get("failure")
    if failure:
        out += _bytes(4, _str(1, failure["code"]) + _str(2, failure["message"]))
    return out


def encode_run(creation: dict[str, Any], state: State) -> bytes:
    """The serialised ``Run`` for a run's creation record and current state."""
    out = (_str(1, creation["run_id"]) + _str(2, creation["session_id"])
           + _uint(3, RunMode[creation["mode"]].value) + _str(4, creation["role"])
           + _uint(5, RunStatus[state["status"]].value) + _uint(6, state["last_sequence"])
           + _bytes(7, _timestamp(creation["create_time"]))
           + _bytes(8, _timestamp(state["update_time"]))
           + _str(9, creation["idempotency_key"]))
    if creation.get("end_user_id") is not None:  # proto3 optional: present even if empty
        out += _bytes(10, creation["end_user_id"].encode())
    out += _uint(11, creation["max_turns"])
    if state["pending"] is not None and state["status"] == "WAITING_FOR_INPUT":
        out += _bytes(12, bytes(views.interaction(state["pending"])))
    if state["result"] is not None:
        out += _bytes(13, _result(state["result"]))
    return out


def encode_run_reply(creation: dict[str, Any], state: State) -> bytes:
    """The serialised ``GetRunResponse`` (whose only field is the run)."""
    return _bytes(1, encode_run(creation, state))
