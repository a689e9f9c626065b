"""Unit checks of the pieces that handle raw protobuf bytes."""

from __future__ import annotations

import pytest

from colossus_reference_worker._gen.colossus.api.v1alpha1 import WatchRunResponse
from colossus_reference_worker.config import Limits
from colossus_reference_worker.engine import views
from colossus_reference_worker.engine.watch_encoding import encode_watch_response
from colossus_reference_worker.errors import ApiError
from colossus_reference_worker.wire.guard import check_create_run, check_list_runs

EVENTS = [
    {"type": "status", "previous": "QUEUED", "status": "RUNNING"},
    {"type": "output", "text": "héllo\n"},
    {"type": "output", "text": ""},
    {"type": "tool", "activity_id": "act_1", "action_class": "NETWORK",
     "display_category": "web pages", "phase": "COMPLETED"},
    {"type": "interaction_resolved", "interaction_id": "ix_4", "outcome": "ANSWERED",
     "choice": "red"},
    {"type": "interaction_resolved", "interaction_id": "ix_4", "outcome": "CANCELLED"},
    {"type": "terminated", "status": "SUCCEEDED", "result": {"output_text": "x"}},
]


@pytest.mark.parametrize("event", EVENTS)
def test_fast_encoding_matches_generated_classes(event):
    payload = {"seq": 300, "time": 1_795_990_785_123_456, "event": event}
    expected = bytes(WatchRunResponse(event=views.event("run_abc", payload)))
    assert encode_watch_response("run_abc", payload) == expected


def test_guard_counts_packed_and_unpacked_statuses():
    limits = Limits()
    nine_mixed = bytes([0x0A, 4, 1, 2, 3, 4]) + b"".join(bytes([0x08, v]) for v in range(5, 10))
    check_list_runs(nine_mixed, limits)
    with pytest.raises(ApiError) as caught:
        check_list_runs(nine_mixed + bytes([0x08, 1]), limits)
    assert caught.value.reason == "STATUS_FILTER_TOO_LARGE"


def test_guard_rejects_malformed_bytes():
    with pytest.raises(ApiError) as caught:
        check_create_run(b"\x12\xff\xff\xff\xff\x0f", Limits())
    assert caught.value.reason == "FIELD_INVALID"


def test_documented_scripts_parse():
    import re
    from pathlib import Path

    from colossus_reference_worker.runtime.script import parse

    doc = (Path(__file__).resolve().parents[2] / "docs/reference-worker.md").read_text()
    blocks = [b for b in re.findall(r"```text\n(.*?)```", doc, re.S)
              if b.startswith("colossus-script v1")]
    assert len(blocks) >= 2
    for block in blocks:
        assert parse(block.rstrip("\n"))
