"""C5: the bearer never appears in a log line, an exception's text or a repr."""

from __future__ import annotations

import logging
import traceback

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client.api.v1alpha1 import runs_pb2
from conftest import daemon_options
from fake_worker import BEARER, FakeWorker, make_run, output_event, terminal_event


def test_full_run_never_shows_the_bearer(
    fake: FakeWorker, api_dir: object, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []

    def keep(exc: BaseException) -> None:
        texts.extend([str(exc), repr(exc), "".join(traceback.format_exception(exc))])

    options = daemon_options(fake, api_dir)  # type: ignore[arg-type]
    texts.extend([repr(options), repr(options.credentials), str(options)])
    fake.b.events["run_1"] = [output_event("run_1", 1), terminal_event("run_1", 2)]
    fake.b.runs["run_1"] = make_run("run_1", status=runs_pb2.RUN_STATUS_SUCCEEDED, last_sequence=2)
    with colossus.Client.connect(options) as client:
        texts.append(repr(client))
        created = client.runs.create("hello")
        texts.append(repr(created))
        texts.extend(repr(e) for e in client.runs.watch("run_1"))
        fake.b.fail["CreateRun"] = [(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")]
        fake.b.fail["GetRun"] = [(grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")]
        fake.b.watch_scripts = [
            [("event", output_event("run_1", 1)), ("event", output_event("run_1", 3))]
        ]
        for action in (
            lambda: client.runs.create("again"),
            lambda: client.runs.get("run_1"),
            lambda: list(client.runs.watch("run_1")),
            lambda: client.runs.create("x", idempotency_key="bad key"),
        ):
            try:
                action()
            except colossus.ColossusError as exc:
                keep(exc)
    for bad in (BEARER + "\n", "Bearer " + BEARER):
        try:
            colossus.InMemoryCredentialProvider(bad)
        except colossus.ColossusError as exc:
            keep(exc)
    try:
        colossus.Client.connect(daemon_options(fake, api_dir, credentials=_Leaky()))  # type: ignore[arg-type]
    except colossus.ColossusError as exc:
        keep(exc)
    texts.extend(record.getMessage() for record in caplog.records)
    assert len(texts) > 10
    assert caplog.records, "the SDK logs its connection and runs"
    for text in texts:
        assert BEARER not in text
        assert BEARER[:12] not in text


class _Leaky:
    def load_bearer(self) -> str:
        raise ValueError(f"could not parse {BEARER}")


def test_bearer_holder_cannot_be_pickled_or_printed() -> None:
    import pickle

    from colossus_agent_client._transport._bearer import Bearer

    bearer = Bearer(BEARER)
    assert BEARER not in repr(bearer) and BEARER not in str(bearer) and BEARER not in f"{bearer}"
    with pytest.raises(TypeError):
        pickle.dumps(bearer)
    provider = colossus.InMemoryCredentialProvider(BEARER)
    assert BEARER not in repr(provider)
