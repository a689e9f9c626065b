"""The sync watch's closing GetRun, sent at the terminal event as a one-answer stream."""

from __future__ import annotations

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client._watch import _only_answer
from colossus_agent_client.api.v1alpha1 import run_service_pb2, runs_pb2
from fake_worker import FakeWorker, make_run, output_event, terminal_event

RUN = "run_1"


def _finished_run(fake: FakeWorker) -> None:
    fake.b.events[RUN] = [output_event(RUN, 1), output_event(RUN, 2), terminal_event(RUN, 3)]
    fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=3)


def test_early_get_run_that_fails_retryably_is_sent_again(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _finished_run(fake)
    fake.b.fail["GetRun"] = [(grpc.StatusCode.UNAVAILABLE, None)]
    assert [e.sequence for e in client.runs.watch(RUN)] == [1, 2, 3]
    assert fake.methods().count("GetRun") == 2


def test_early_get_run_refused_raises_the_typed_error(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _finished_run(fake)
    fake.b.fail["GetRun"] = [(grpc.StatusCode.PERMISSION_DENIED, None)]
    with pytest.raises(colossus.PermissionDeniedError):
        list(client.runs.watch(RUN))
    assert fake.methods().count("GetRun") == 1


def test_early_get_run_answer_is_reconciled(fake: FakeWorker, client: colossus.Client) -> None:
    # The run ends at 4 while the stream ended at 3: the early answer must still be checked.
    _finished_run(fake)
    fake.b.runs[RUN] = make_run(RUN, status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=4)
    with pytest.raises(colossus.ProtocolViolationError) as caught:
        list(client.runs.watch(RUN))
    assert caught.value.reason == "WATCH_RECONCILE_MISMATCH"


def test_a_caller_stopping_at_the_terminal_event_sends_no_get_run(
    fake: FakeWorker, client: colossus.Client
) -> None:
    _finished_run(fake)
    with client.runs.watch(RUN) as watch:
        for event in watch:
            if event.is_terminal:
                break
    assert "GetRun" not in fake.methods()


@pytest.mark.parametrize("answers", [0, 2])
def test_a_get_run_stream_must_answer_exactly_once(answers: int) -> None:
    response = run_service_pb2.GetRunResponse(run=make_run(RUN))
    with pytest.raises(colossus.ProtocolViolationError) as caught:
        _only_answer(iter([response] * answers))
    assert caught.value.reason == "RESPONSE_MALFORMED"


def test_a_get_run_stream_with_one_answer_gives_it() -> None:
    response = run_service_pb2.GetRunResponse(run=make_run(RUN))
    assert _only_answer(iter([response])) is response
