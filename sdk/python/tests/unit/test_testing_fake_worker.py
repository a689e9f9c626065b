"""colossus_agent_client.testing: the fake worker an application uses in its own unit tests.

These tests are also the documented example of how to use it.
"""

from __future__ import annotations

import pytest

import colossus_agent_client as colossus
from colossus_agent_client.testing import FakeWorker, Fault

pytest_plugins = ["colossus_agent_client.testing.pytest_plugin"]


def _text(watch: colossus.Watch) -> str:
    return "".join(e.payload.text for e in watch if isinstance(e.payload, colossus.OutputDelta))


def test_scripted_run_streams_its_output(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["Hello", ", world"])
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run = client.runs.create("say hello").run
        assert _text(client.runs.watch(run.run_id)) == "Hello, world"
        assert client.runs.get(run.run_id).status is colossus.RunStatus.SUCCEEDED


def test_dropped_stream_is_resumed_without_duplicates(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["a", "b", "c"])
    colossus_fake_worker.inject(Fault.drop_watch(after_events=2))
    reconnects: list[colossus.ReconnectInfo] = []
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run = client.runs.create("x").run
        assert _text(client.runs.watch(run.run_id, on_reconnect=reconnects.append)) == "abc"
    assert [r.after_sequence for r in reconnects] == [2]
    assert colossus_fake_worker.calls.count("WatchRun") == 2


def test_gap_fails_the_watch(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["a", "b", "c"])
    colossus_fake_worker.inject(Fault.gap(after_events=1))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        run = client.runs.create("x").run
        with pytest.raises(colossus.WatchGapError):
            _text(client.runs.watch(run.run_id))


def test_unavailable_after_commit_is_recovered_with_the_same_key(
    colossus_fake_worker: FakeWorker,
) -> None:
    colossus_fake_worker.inject(Fault.unavailable_after_commit("CreateRun"))
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        with pytest.raises(colossus.OutcomeUnknownError) as info:
            client.runs.create("x")
        again = client.runs.create("x", idempotency_key=info.value.idempotency_key)
    assert again.replayed


def test_injected_failure_maps_to_the_typed_error(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.inject(Fault.fail("GetRun", "PERMISSION_DENIED", "SCOPE_MISSING"))
    run_id = colossus_fake_worker.add_run(["done"])
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        with pytest.raises(colossus.PermissionDeniedError) as info:
            client.runs.get(run_id)
    assert info.value.reason == "SCOPE_MISSING"


def test_statuses_and_page_token_by_name(colossus_fake_worker: FakeWorker) -> None:
    for status in ("SUCCEEDED", "FAILED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"):
        colossus_fake_worker.add_run(status=status)
    with colossus.Client.connect(colossus_fake_worker.daemon_options()) as client:
        first = next(client.runs.list(statuses=["succeeded"], page_size=3).pages())
        assert len(first.runs) == 3 and first.next_page_token
        rest = list(client.runs.list(statuses=["SUCCEEDED"], page_token=first.next_page_token))
        assert len(rest) == 1
        assert {r.status for r in rest} == {colossus.RunStatus.SUCCEEDED}


async def test_async_with_connect_needs_no_await(colossus_fake_worker: FakeWorker) -> None:
    colossus_fake_worker.script(["async"])
    async with colossus.AsyncClient.connect(colossus_fake_worker.daemon_options()) as client:
        run = (await client.runs.create("x", mode="execute")).run
        texts = [
            e.payload.text
            async for e in client.runs.watch(run.run_id)
            if isinstance(e.payload, colossus.OutputDelta)
        ]
    assert texts == ["async"]
    client_awaited = await colossus.AsyncClient.connect(colossus_fake_worker.daemon_options())
    await client_awaited.close()
