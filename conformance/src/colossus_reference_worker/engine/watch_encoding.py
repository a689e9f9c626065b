"""Direct protobuf encoding of the common watch events.

Replaying a long run is dominated by message serialisation, so the frequent,
flat event kinds (status changes, output deltas, tool activity, resolutions)
are written straight to protobuf bytes here; the rarer kinds that embed an
``Interaction`` or a ``RunResult`` go through the generated classes. The
output is byte-for-byte what the generated ``WatchRunResponse`` produces
(see ``tests/worker/test_wire.py``).
"""

from __future__ import annotations

from typing import Any

from .._gen.colossus.api.v1alpha1 import (
    ActionClass,
    InteractionOutcome,
    RunStatus,
    ToolActivityPhase,
    WatchRunResponse,
)
from ..wire import protowire
from . import views

# Local names: the replay loop calls these per event, so skip the module lookup.
_bytes = protowire.length_delimited
_str = protowire.string
_uint = protowire.uint
_timestamp = protowire.timestamp


def encode_watch_response(run_id: str, payload: dict[str, Any]) -> bytes:
    """The serialised ``WatchRunResponse`` for one stored event."""
    data = payload["event"]
    kind = data["type"]
    if kind == "status":
        body = _bytes(10, _uint(1, RunStatus[data["previous"]].value)
                      + _uint(2, RunStatus[data["status"]].value))
    elif kind == "output":
        body = _bytes(11, _str(1, data["text"]))
    elif kind == "interaction_resolved":
        body = _bytes(13, _str(1, data["interaction_id"])
                      + _uint(2, InteractionOutcome[data["outcome"]].value)
                      + _str(3, data.get("choice", "")))
    elif kind == "tool":
        body = _bytes(14, _str(1, data["activity_id"])
                      + _uint(2, ActionClass[data["action_class"]].value)
                      + _str(3, data["display_category"])
                      + _uint(4, ToolActivityPhase[data["phase"]].value))
    else:
        return bytes(WatchRunResponse(event=views.event(run_id, payload)))
    event = (_str(1, run_id) + _uint(2, payload["seq"])
             + _bytes(3, _timestamp(payload["time"])) + body)
    return _bytes(1, event)
