"""Cases with runner actions are cut into client segments, and stitched back together."""

from colossus_conformance.observations import merge_observations
from colossus_conformance.segments import resolve_earlier, split_segments, without_role


def test_split_at_runner_actions():
    steps = [
        {"id": "a", "op": "create_run"},
        {"id": "r", "op": "restart_worker"},
        {"id": "b", "op": "get_run"},
    ]
    segments = split_segments(steps)
    assert [s.action["id"] if s.action else [x["id"] for x in s.steps] for s in segments] == [
        ["a"],
        "r",
        ["b"],
    ]
    assert len(split_segments(steps[:1])) == 1


def test_references_to_earlier_segments_are_filled_in_by_the_runner():
    reports = {"c": {"id": "c", "value": {"run": {"run_id": "run_1"}, "events": [{"sequence": 4}]}}}
    args = {"run_id": "$c.run.run_id", "after": "$c.events.-1.sequence", "later": "$d.run.run_id", "n": 3}
    assert resolve_earlier(args, reports) == {"run_id": "run_1", "after": 4, "later": "$d.run.run_id", "n": 3}


def test_observations_of_two_worker_lifetimes_are_merged():
    a = {"connections": [{"id": 1}], "rpc_calls": {"X": 1}, "watch_cursors": [0], "bearer_seen": False}
    b = {"connections": [{"id": 1}], "rpc_calls": {"X": 2, "Y": 1}, "watch_cursors": [3], "bearer_seen": True}
    merged = merge_observations(a, b)
    assert merged["rpc_calls"] == {"X": 3, "Y": 1}
    assert merged["watch_cursors"] == [0, 3] and merged["bearer_seen"] is True
    assert len(merged["connections"]) == 2
    assert merge_observations({}, b) == b


def test_cross_sdk_cases_are_cut_where_the_role_changes():
    steps = [
        {"id": "a", "op": "create_run", "sdk": "A"},
        {"id": "b", "op": "watch", "sdk": "B"},
        {"id": "c", "op": "watch", "sdk": "B"},
        {"id": "r", "op": "restart_worker"},
        {"id": "d", "op": "get_run", "sdk": "B"},
    ]
    segments = split_segments(steps, by_role=True)
    assert [(s.role, [x["id"] for x in s.steps], s.action is not None) for s in segments] == [
        ("A", ["a"], False),
        ("B", ["b", "c"], False),
        (None, [], True),
        ("B", ["d"], False),
    ]
    # Without roles the same steps make one segment before the restart.
    assert [len(s.steps) for s in split_segments(steps)] == [3, 0, 1]


def test_clients_never_see_the_role():
    assert without_role({"id": "a", "op": "watch", "sdk": "A", "args": {}}) == {
        "id": "a",
        "op": "watch",
        "args": {},
    }
