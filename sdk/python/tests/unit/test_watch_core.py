"""The sans-IO watch state machine on its own: dedup window, gaps, reconciliation, budget."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from datetime import UTC

import pytest

import colossus_agent_client as colossus
from colossus_agent_client import _convert
from colossus_agent_client._watch_core import REPLAY_WINDOW, CloseAction, Verdict, WatchCore
from colossus_agent_client.api.v1alpha1 import runs_pb2
from fake_worker import make_run

POLICY = colossus.RetryPolicy(max_attempts=3, initial_backoff=0.1, max_backoff=0.15)


def core(after: int = 0) -> WatchCore[str]:
    return WatchCore("run_1", after, POLICY)


def test_dedup_and_window() -> None:
    c = core()
    for i in range(1, REPLAY_WINDOW + 11):
        assert c.on_event("run_1", i, f"e{i}", terminal=False) is Verdict.DELIVER
    assert (
        c.on_event("run_1", REPLAY_WINDOW + 10, f"e{REPLAY_WINDOW + 10}", terminal=False)
        is Verdict.DROP
    )
    assert c.on_event("run_1", 11, "e11", terminal=False) is Verdict.DROP
    assert len(c.remembered_sequences) == REPLAY_WINDOW
    with pytest.raises(colossus.ProtocolViolationError) as info:
        c.on_event("run_1", 5, "e5", terminal=False)  # older than the window
    assert info.value.reason == "WATCH_REPLAY_UNVERIFIABLE"


def test_before_caller_cursor_is_refused() -> None:
    c = core(after=10)
    with pytest.raises(colossus.ProtocolViolationError):
        c.on_event("run_1", 10, "x", terminal=False)
    assert c.on_event("run_1", 11, "x", terminal=False) is Verdict.DELIVER


def test_event_after_terminal_is_refused() -> None:
    c = core()
    c.on_event("run_1", 1, "a", terminal=True)
    assert c.finished_stream
    with pytest.raises(colossus.ProtocolViolationError):
        c.on_event("run_1", 2, "b", terminal=False)


def test_budget_resets_on_progress() -> None:
    c = core()
    first = c.on_retryable_failure()
    second = c.on_retryable_failure()
    assert first is not None and second is not None
    assert (first.attempt, second.attempt) == (1, 2)
    assert all(0 <= r.delay <= 0.15 for r in (first, second))
    assert c.on_retryable_failure() is None
    c.on_event("run_1", 1, "a", terminal=False)
    resumed = c.on_retryable_failure()
    assert resumed is not None and resumed.attempt == 1 and resumed.after_sequence == 1


def _run(status: int, last: int, run_id: str = "run_1") -> colossus.Run:
    return _convert.run(make_run(run_id, status=status, last_sequence=last))


def test_reconcile() -> None:
    c = core()
    c.on_event("run_1", 1, "a", terminal=False)
    c.on_event("run_1", 2, "b", terminal=True)
    assert c.on_clean_close(_run(runs_pb2.RUN_STATUS_SUCCEEDED, 2)) is CloseAction.COMPLETE
    with pytest.raises(colossus.ProtocolViolationError):
        c.on_clean_close(_run(runs_pb2.RUN_STATUS_SUCCEEDED, 3))
    with pytest.raises(colossus.ProtocolViolationError):
        c.on_clean_close(_run(runs_pb2.RUN_STATUS_SUCCEEDED, 2, "run_2"))
    with pytest.raises(colossus.ProtocolViolationError):
        c.on_clean_close(_run(runs_pb2.RUN_STATUS_RUNNING, 2))  # saw terminal, run says running
    fresh = core()
    fresh.on_event("run_1", 1, "a", terminal=False)
    assert fresh.on_clean_close(_run(runs_pb2.RUN_STATUS_RUNNING, 1)) is CloseAction.RESUME
    with pytest.raises(colossus.ProtocolViolationError):
        fresh.on_clean_close(_run(runs_pb2.RUN_STATUS_RUNNING, 0))


def test_event_time_is_exact_and_utc() -> None:
    from datetime import datetime

    from fake_worker import output_event

    pb = output_event("run_1", 1)
    assert _convert.run_event(pb).event_time is None
    pb.event_time.seconds, pb.event_time.nanos = 1_795_993_195, 257_167_999
    event = _convert.run_event(pb)
    assert event.event_time == datetime(2026, 11, 29, 22, 59, 55, 257167, tzinfo=UTC)
    assert event.event_time_us == 1_795_993_195_257_167


def test_fast_path_keeps_every_check() -> None:
    # The in-order shortcut must not let through what the full checks refuse.
    c = core()
    assert c.on_event("run_1", 1, "a", terminal=False) is Verdict.DELIVER
    with pytest.raises(colossus.ProtocolViolationError) as info:
        c.on_event("run_other", 2, "b", terminal=False)  # next sequence, wrong run
    assert info.value.reason == "WATCH_WRONG_RUN"
    assert c.last_sequence == 1
    with pytest.raises(colossus.WatchGapError):
        c.on_event("run_1", 3, "c", terminal=False)
    assert c.on_event("run_1", 1, "a", terminal=False) is Verdict.DROP
    with pytest.raises(colossus.ProtocolViolationError) as info:
        c.on_event("run_1", 1, "altered", terminal=False)
    assert info.value.reason == "WATCH_REPLAY_ALTERED"
    assert c.on_event("run_1", 2, "t", terminal=True) is Verdict.DELIVER
    assert c.finished_stream
    assert c.on_event("run_1", 2, "t", terminal=True) is Verdict.DROP
    with pytest.raises(colossus.ProtocolViolationError) as info:
        c.on_event("run_1", 3, "after", terminal=False)  # next sequence after the terminal
    assert info.value.reason == "WATCH_AFTER_TERMINAL"
    with pytest.raises(colossus.ProtocolViolationError) as info:
        c.on_event("run_1", 2, "t2", terminal=True)
    assert info.value.reason == "WATCH_REPLAY_ALTERED"


def _pickled(event: colossus.RunEvent) -> colossus.RunEvent:
    loaded: colossus.RunEvent = pickle.loads(pickle.dumps(event))  # noqa: S301 (our own bytes)
    return loaded


def test_fast_construction_equals_the_dataclass_constructor() -> None:
    from fake_worker import output_event, terminal_event

    pb = output_event("run_1", 7, "hello")
    pb.event_time.seconds, pb.event_time.nanos = 12, 345_678
    for event, expected in [
        (
            _convert.run_event(pb),
            colossus.RunEvent("run_1", 7, colossus.OutputDelta("hello"), 12_000_345),
        ),
        (
            _convert.run_event(pb, "output_delta", "run_1", 7),
            colossus.RunEvent("run_1", 7, colossus.OutputDelta("hello"), 12_000_345),
        ),
        (
            _convert.run_event(output_event("run_1", 1, "x")),
            colossus.RunEvent("run_1", 1, colossus.OutputDelta("x"), None),
        ),
        (
            _convert.run_event(terminal_event("run_1", 2)),
            colossus.RunEvent(
                "run_1",
                2,
                colossus.RunTerminated(
                    colossus.RunStatus.SUCCEEDED, colossus.RunResult(output_text="done")
                ),
                None,
            ),
        ),
        (_convert.run_event(runs_pb2.RunEvent(run_id="run_1", sequence=3)), None),
    ]:
        if expected is None:
            assert event.payload is None and event.sequence == 3
            continue
        assert event == expected
        assert hash(event) == hash(expected)
        assert repr(event) == repr(expected)
        assert type(event) is colossus.RunEvent
        assert type(event.payload) is type(expected.payload)
        # Copies and pickles come from the model class too, so they match as well.
        for clone in (copy.copy(event), copy.deepcopy(event), _pickled(event)):
            assert clone == expected and type(clone) is colossus.RunEvent
        assert pickle.dumps(event) == pickle.dumps(expected)
        assert dataclasses.astuple(event) == dataclasses.astuple(expected)
        assert dataclasses.replace(event, sequence=99) == dataclasses.replace(expected, sequence=99)
    event = _convert.run_event(pb)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.sequence = 8  # type: ignore[misc]
    assert isinstance(event.payload, colossus.OutputDelta)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.payload.text = "changed"  # type: ignore[misc]
    # A new attribute is refused (the exact exception depends on the Python version, and is
    # the same for an instance the constructor built).
    with pytest.raises((AttributeError, TypeError)):
        event.extra = 1  # type: ignore[attr-defined]


def test_deferred_event_time_looks_converted_to_every_first_reader() -> None:
    # The watch's events convert their time on first read; whichever observer reads it
    # first must see exactly what an eagerly built event shows.
    from fake_worker import output_event

    unset = output_event("run_1", 1, "x")
    epoch = output_event("run_1", 1, "x")
    epoch.event_time.SetInParent()  # present, and zero: the epoch itself, not "unset"
    timed = output_event("run_1", 1, "x")
    timed.event_time.seconds, timed.event_time.nanos = 1_795_993_195, 257_167_999
    observers: list[tuple[str, Callable[[colossus.RunEvent], object]]] = [
        ("event_time_us", lambda e: e.event_time_us),
        ("event_time", lambda e: e.event_time),
        ("repr", repr),
        ("hash", hash),
        ("ne", lambda e: e != colossus.RunEvent("run_1", 1, colossus.OutputDelta("x"), -1)),
        ("pickle", _pickled),
        ("copy", copy.copy),
        ("deepcopy", copy.deepcopy),
        ("astuple", dataclasses.astuple),
        ("asdict", dataclasses.asdict),
        ("replace", lambda e: dataclasses.replace(e, sequence=2)),
        ("match", lambda e: e.__match_args__ and [getattr(e, n) for n in e.__match_args__]),
    ]
    for pb, micros in ((unset, None), (epoch, 0), (timed, 1_795_993_195_257_167)):
        expected = colossus.RunEvent("run_1", 1, colossus.OutputDelta("x"), micros)
        for name, observe in observers:
            event = _convert.run_event(pb, "output_delta", "run_1", 1)
            assert observe(event) == observe(expected), name
            assert event == expected and hash(event) == hash(expected), name
            assert event.event_time_us == micros and type(event.event_time_us) is type(micros)
    # On the class the attribute is still the slot, and explicit values pass untouched.
    on_class = vars(colossus.RunEvent)["event_time_us"].__get__(None, colossus.RunEvent)
    assert type(on_class).__name__ == "member_descriptor"
    assert colossus.RunEvent("r", 1, None, 5).event_time_us == 5
    assert colossus.RunEvent("r", 1, None).event_time_us is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        _convert.run_event(timed).event_time_us = 1  # type: ignore[misc]


def test_fast_construction_refuses_a_changed_model() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError):
        _convert._mutable_twin(Checked, ("a",))
    with pytest.raises(TypeError):
        _convert._mutable_twin(colossus.RunEvent, ("run_id", "sequence", "payload"))
    with pytest.raises(TypeError):  # same fields in another order: another slot layout
        _convert._mutable_twin(
            colossus.RunEvent, ("sequence", "run_id", "payload", "event_time_us")
        )

    @dataclasses.dataclass(frozen=True)
    class WithoutSlots:
        a: int

    with pytest.raises(TypeError):
        _convert._mutable_twin(WithoutSlots, ("a",))
