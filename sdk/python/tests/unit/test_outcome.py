"""runs.wait, runs.text_stream and the create retry under CREATE_RATE_LIMIT (S11).

Against the SDK's own fake worker, so each also shows an application how to test its use.
"""

from __future__ import annotations

import asyncio
import time

import pytest

import colossus_agent_client as colossus
from colossus_agent_client.testing import FakeWorker, Fault

pytest_plugins = ["colossus_agent_client.testing.pytest_plugin"]


def test_wait_returns_an_ended_run_with_one_read(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["Hello", ", world"])
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run_id = client.runs.create("hi").run.run_id
        run = client.runs.wait(run_id)
    assert run.status is colossus.RunStatus.SUCCEEDED
    assert run.result is not None and run.result.output_text == "Hello, world"
    assert colossus_fake_worker.calls[-1:] == ["GetRun"]
    assert "WatchRun" not in colossus_fake_worker.calls


def test_wait_follows_a_run_that_has_not_ended_through_its_watch(
    colossus_fake_worker: FakeWorker,
) -> None:
    colossus_fake_worker.script(["a", "b", "c"], status="FAILED")
    colossus_fake_worker.inject(Fault.not_started(), Fault.drop_watch(after_events=2))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run_id = client.runs.create("x").run.run_id
        run = client.runs.wait(run_id)
    assert run.status is colossus.RunStatus.FAILED
    assert run.last_sequence == 4
    # The first read said "not started"; the watch reconnected once after the drop and
    # its closing GetRun confirmed the end.
    expected = ["CreateRun", "GetRun", "WatchRun", "WatchRun", "GetRun"]
    assert colossus_fake_worker.calls[1:] == expected


def test_wait_fails_as_the_watch_fails(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["a", "b", "c"])
    colossus_fake_worker.inject(Fault.not_started(), Fault.gap(after_events=1))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run_id = client.runs.create("x").run.run_id
        with pytest.raises(colossus.WatchGapError):
            client.runs.wait(run_id)


def test_text_stream_yields_only_output_text(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["one ", "two ", "three"])
    colossus_fake_worker.inject(Fault.replay(after_events=2))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run_id = client.runs.create("x").run.run_id
        with client.runs.text_stream(run_id) as texts:
            assert list(texts) == ["one ", "two ", "three"]
            assert texts.final_run is not None
            assert texts.final_run.status is colossus.RunStatus.SUCCEEDED
            assert texts.last_sequence == 4


def test_text_stream_resumes_after_a_sequence(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["one ", "two ", "three"])
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run_id = client.runs.create("x").run.run_id
        assert list(client.runs.text_stream(run_id, after_sequence=2)) == ["three"]


def test_rate_limited_create_retries_with_the_same_key_after_the_workers_delay(
    colossus_fake_worker: FakeWorker,
) -> None:
    colossus_fake_worker.inject(Fault.rate_limit(retry_delay=0.2))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        started = time.monotonic()
        result = client.runs.create("x", idempotency_key="k-1", rate_limit_retries=2)
        elapsed = time.monotonic() - started
    assert result.idempotency_key == "k-1" and not result.replayed
    assert colossus_fake_worker.calls.count("CreateRun") == 2
    assert elapsed >= 0.2


def test_rate_limited_create_without_retries_exposes_the_delay(
    colossus_fake_worker: FakeWorker,
) -> None:
    colossus_fake_worker.inject(Fault.rate_limit(retry_delay=1.5))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            client.runs.create("x")
    assert caught.value.reason == "CREATE_RATE_LIMIT"
    assert caught.value.retry_delay == pytest.approx(1.5)
    assert caught.value.idempotency_key is not None
    assert colossus_fake_worker.calls.count("CreateRun") == 1


def test_the_retries_run_out_and_the_last_refusal_is_raised(
    colossus_fake_worker: FakeWorker,
) -> None:
    colossus_fake_worker.inject(*(Fault.rate_limit(retry_delay=0.01) for _ in range(3)))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        with pytest.raises(colossus.ResourceExhaustedError):
            client.runs.create("x", rate_limit_retries=2)
    assert colossus_fake_worker.calls.count("CreateRun") == 3


def test_other_exhaustion_is_never_retried(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.inject(Fault.fail("CreateRun", "RESOURCE_EXHAUSTED", "ACTIVE_RUN_LIMIT"))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        with pytest.raises(colossus.ResourceExhaustedError) as caught:
            client.runs.create("x", rate_limit_retries=5)
    assert caught.value.retry_delay is None
    assert colossus_fake_worker.calls.count("CreateRun") == 1


def test_async_wait_and_text_stream(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["a", "b"])
    colossus_fake_worker.script(["c"])
    colossus_fake_worker.inject(Fault.rate_limit(retry_delay=0.01))

    async def main() -> tuple[colossus.Run, list[str]]:
        async with await colossus.AsyncClient.connect(
            colossus_fake_worker.daemon_options()
        ) as client:
            first = (await client.runs.create("x", rate_limit_retries=1)).run.run_id
            second = (await client.runs.create("y")).run.run_id
            colossus_fake_worker.inject(Fault.not_started())
            run = await client.runs.wait(first)
            async with client.runs.text_stream(second) as texts:
                pieces = [t async for t in texts]
            return run, pieces

    run, pieces = asyncio.run(main())
    assert run.status is colossus.RunStatus.SUCCEEDED and run.last_sequence == 3
    assert pieces == ["c"]
