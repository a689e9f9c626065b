"""The SDK against the real reference worker over real loopback TLS 1.3.

These need the ``colossus-reference-worker`` executable (``pip install ./conformance``, or
set ``COLOSSUS_REFERENCE_WORKER``). When it cannot be found every test here is skipped
with that reason, which ``pytest -ra`` prints; the nox session installs it, so CI runs them.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

import colossus_agent_client as colossus

sys.path.insert(0, str(Path(__file__).parent))
from worker import Enrollment, ReferenceWorker, find_worker

EXECUTABLE = find_worker()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        EXECUTABLE is None,
        reason="reference worker not found: "
        "pip install ./conformance or set COLOSSUS_REFERENCE_WORKER",
    ),
]
RELAXED = (
    "--limit",
    "create_rate_per_application_per_second=1000",
    "--limit",
    "create_rate_per_application_burst=1000",
    "--limit",
    "create_rate_per_second=1000",
    "--limit",
    "create_rate_burst=1000",
    "--limit",
    "max_active_runs_per_application=32",
)
FAST = colossus.RetryPolicy(max_attempts=5, initial_backoff=0.05, max_backoff=0.2)


def script(*steps: str) -> str:
    return "\n".join(["colossus-script v1", *steps])


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ReferenceWorker, Enrollment]]:
    assert EXECUTABLE is not None
    root = tmp_path_factory.mktemp("daemon")
    worker = ReferenceWorker(EXECUTABLE, root)
    enrollment = worker.enroll()
    # Many runs are created back to back; lift the create buckets so rate limits
    # (tested by the conformance suite) do not interfere.
    worker.start(*RELAXED, fault_control=True)
    yield worker, enrollment
    worker.stop()


def options(
    worker: ReferenceWorker, enrollment: Enrollment, **kw: object
) -> colossus.DaemonOptions:
    values: dict[str, object] = dict(
        public_api_dir=worker.api_dir,
        expected_instance_id=enrollment.instance_id,
        expected_certificate_sha256=enrollment.certificate_sha256,
        credentials=colossus.InMemoryCredentialProvider(enrollment.bearer),
        retry=FAST,
    )
    values.update(kw)
    return colossus.DaemonOptions(**values)  # type: ignore[arg-type]


@pytest.fixture
def client(daemon: tuple[ReferenceWorker, Enrollment]) -> Iterator[colossus.Client]:
    worker, enrollment = daemon
    worker.begin_case("sdk-python", [])
    with colossus.Client.connect(options(worker, enrollment)) as c:
        yield c
    worker.end_case()


def test_connect_verifies_server_info_over_tls13(
    daemon: tuple[ReferenceWorker, Enrollment], client: colossus.Client
) -> None:
    worker, enrollment = daemon
    info = client.server_info
    assert info.instance_id == enrollment.instance_id
    assert info.deployment_mode is colossus.DeploymentMode.SHARED_DAEMON
    obs = worker.observations()
    versions = {c["tls_version"] for c in obs["connections"]}
    assert versions == {"TLSv1.3"}
    first_rpcs = [c["rpcs"] for c in obs["connections"] if c["rpcs"]]
    assert first_rpcs[0][0] == "SystemService/GetServerInfo"


def test_full_run_create_watch_get_list(client: colossus.Client) -> None:
    created = client.runs.create(script("say hello", "say world"))
    run_id = created.run.run_id
    events = list(client.runs.watch(run_id))
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    text = "".join(e.payload.text for e in events if isinstance(e.payload, colossus.OutputDelta))
    assert text == "helloworld"
    final = client.runs.get(run_id)
    assert final.status is colossus.RunStatus.SUCCEEDED
    assert final.last_sequence == events[-1].sequence
    assert run_id in {r.run_id for r in client.runs.list()}


def test_idempotent_replay_and_conflict(client: colossus.Client) -> None:
    first = client.runs.create("same input", idempotency_key="sdk-py-idem-1")
    again = client.runs.create("same input", idempotency_key="sdk-py-idem-1")
    assert again.replayed and again.run.run_id == first.run.run_id
    with pytest.raises(colossus.IdempotencyConflictError) as info:
        client.runs.create("different input", idempotency_key="sdk-py-idem-1")
    assert info.value.idempotency_key == "sdk-py-idem-1"
    assert info.value.reason == "IDEMPOTENCY_CONFLICT"


def test_prompt_interaction_and_cancel(client: colossus.Client) -> None:
    created = client.runs.create(script("ask Proceed? | yes | no", "say after"))
    run_id = created.run.run_id
    with client.runs.watch(run_id) as watch:
        for event in watch:
            if isinstance(event.payload, colossus.InteractionRequested):
                interaction = event.payload.interaction
                assert interaction.prompt is not None and interaction.prompt.choices == (
                    "yes",
                    "no",
                )
                client.runs.respond(
                    run_id, interaction.interaction_id, colossus.PromptAnswer("yes")
                )
            if event.is_terminal:
                break
    assert client.runs.get(run_id).status is colossus.RunStatus.SUCCEEDED
    sleeper = client.runs.create(script("sleep forever")).run.run_id
    cancelled = client.runs.cancel(sleeper)
    assert cancelled.status in (colossus.RunStatus.CANCELLING, colossus.RunStatus.CANCELLED)
    events = list(client.runs.watch(sleeper))
    assert isinstance(events[-1].payload, colossus.RunTerminated)
    assert events[-1].payload.status is colossus.RunStatus.CANCELLED


def test_not_found_is_typed(client: colossus.Client) -> None:
    with pytest.raises(colossus.NotFoundError) as info:
        client.runs.get("run_doesnotexist")
    assert info.value.reason == "RUN_NOT_FOUND"


def _watch_case(
    daemon: tuple[ReferenceWorker, Enrollment],
    case: str,
    faults: list[dict[str, object]],
    **watch_kw: object,
) -> tuple[list[int], dict[str, object], list[colossus.ReconnectInfo]]:
    worker, enrollment = daemon
    with colossus.Client.connect(options(worker, enrollment)) as c:
        run_id = c.runs.create(script(*[f"say part {i}" for i in range(8)])).run.run_id
        # Let the run finish first, so the watch replays stored history deterministically.
        list(c.runs.watch(run_id))
        worker.begin_case(case, faults)
        seen: list[colossus.ReconnectInfo] = []
        try:
            got = [e.sequence for e in c.runs.watch(run_id, on_reconnect=seen.append, **watch_kw)]  # type: ignore[arg-type]
            return got, worker.observations(), seen
        finally:
            worker.end_case()


def test_watch_dedup_against_replays(daemon: tuple[ReferenceWorker, Enrollment]) -> None:
    got, _, _ = _watch_case(
        daemon, "sdk.watch.dedup", [{"kind": "replay", "after_sequence": 4, "count": 3}]
    )
    assert got == list(range(1, len(got) + 1)) and len(got) == 10


def test_watch_altered_replay_fails(daemon: tuple[ReferenceWorker, Enrollment]) -> None:
    with pytest.raises(colossus.ProtocolViolationError) as info:
        _watch_case(daemon, "sdk.watch.altered", [{"kind": "replay_altered", "after_sequence": 3}])
    assert info.value.reason == "WATCH_REPLAY_ALTERED"


def test_watch_gap_fails(daemon: tuple[ReferenceWorker, Enrollment]) -> None:
    with pytest.raises(colossus.WatchGapError):
        _watch_case(daemon, "sdk.watch.gap", [{"kind": "skip", "sequence": 5}])


def test_watch_reconnects_from_cursor_after_unavailable(
    daemon: tuple[ReferenceWorker, Enrollment],
) -> None:
    got, obs, seen = _watch_case(
        daemon,
        "sdk.watch.reconnect",
        [{"kind": "fail", "after_sequence": 4, "code": "UNAVAILABLE"}],
    )
    assert got == list(range(1, 11))
    assert obs["watch_cursors"] == [0, 4]
    assert len(seen) == 1 and seen[0].after_sequence == 4


def test_watch_clean_close_before_terminal_is_not_completion(
    daemon: tuple[ReferenceWorker, Enrollment],
) -> None:
    with pytest.raises(colossus.ProtocolViolationError) as info:
        _watch_case(daemon, "sdk.watch.clean-close", [{"kind": "clean_close", "after_sequence": 5}])
    assert info.value.reason == "WATCH_RECONCILE_MISMATCH"


def test_watch_non_retryable_failure_is_not_retried(
    daemon: tuple[ReferenceWorker, Enrollment],
) -> None:
    with pytest.raises(colossus.PermissionDeniedError):
        _watch_case(
            daemon,
            "sdk.watch.denied",
            [{"kind": "fail", "after_sequence": 2, "code": "PERMISSION_DENIED"}],
        )


def test_create_outcome_unknown_then_safe_retry(daemon: tuple[ReferenceWorker, Enrollment]) -> None:
    worker, enrollment = daemon
    with colossus.Client.connect(options(worker, enrollment)) as c:
        worker.begin_case(
            "sdk.create.unknown",
            [{"kind": "rpc_fail", "rpc": "CreateRun", "code": "UNAVAILABLE", "after_commit": True}],
        )
        try:
            with pytest.raises(colossus.OutcomeUnknownError) as info:
                c.runs.create("exactly once")
            assert worker.observations()["rpc_calls"]["RunService/CreateRun"] == 1
        finally:
            worker.end_case()
        key = info.value.idempotency_key
        assert key
        again = c.runs.create("exactly once", idempotency_key=key)
        assert again.replayed


def test_server_info_mismatch_is_refused(daemon: tuple[ReferenceWorker, Enrollment]) -> None:
    worker, enrollment = daemon
    worker.begin_case("sdk.serverinfo", [{"kind": "server_info", "deployment_mode": "SIDECAR"}])
    try:
        with pytest.raises(colossus.IncompatibleServerError):
            colossus.Client.connect(options(worker, enrollment))
        rpcs = worker.observations()["rpc_calls"]
        assert set(rpcs) == {"SystemService/GetServerInfo"}
    finally:
        worker.end_case()


@pytest.mark.parametrize(
    ("variant", "error"),
    [
        ("tls12", colossus.TlsPolicyError),
        ("foreign-leaf", colossus.PinMismatchError),
        ("leaf-with-intermediate", colossus.TlsPolicyError),
    ],
)
def test_listener_variants_are_refused_before_the_bearer(
    tmp_path: Path, variant: str, error: type[Exception]
) -> None:
    assert EXECUTABLE is not None
    worker = ReferenceWorker(EXECUTABLE, tmp_path)
    enrollment = worker.enroll()
    worker.start("--fault-listener", variant, fault_control=True)
    try:
        worker.begin_case(f"sdk.listener.{variant}", [])
        with pytest.raises(error):
            colossus.Client.connect(options(worker, enrollment, connect_timeout=5.0))
        assert worker.observations()["bearer_seen"] is False
        worker.end_case()
    finally:
        worker.stop()


def test_sidecar_quick_start(tmp_path: Path) -> None:
    assert EXECUTABLE is not None
    sidecar = colossus.SidecarOptions(executable=EXECUTABLE, application_id="sdk-sidecar")
    with colossus.Client.start_sidecar(sidecar) as c:
        assert c.server_info.deployment_mode is colossus.DeploymentMode.SIDECAR
        run = c.runs.create("hello sidecar").run
        events = list(c.runs.watch(run.run_id))
        assert events[-1].is_terminal


async def test_async_client_against_the_worker(daemon: tuple[ReferenceWorker, Enrollment]) -> None:
    worker, enrollment = daemon
    async with await colossus.AsyncClient.connect(options(worker, enrollment)) as c:
        run = (await c.runs.create(script("say async"))).run
        got = [e async for e in c.runs.watch(run.run_id)]
        assert got[-1].is_terminal
        assert (await c.runs.get(run.run_id)).status is colossus.RunStatus.SUCCEEDED


def test_no_bearer_in_any_log_or_error_of_a_full_run(
    daemon: tuple[ReferenceWorker, Enrollment], caplog: pytest.LogCaptureFixture
) -> None:
    worker, enrollment = daemon
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    opts = options(worker, enrollment)
    texts += [repr(opts), str(opts)]
    with colossus.Client.connect(opts) as c:
        texts.append(repr(c.server_info))
        run = c.runs.create(script("say one", "fail runtime_error boom")).run
        texts += [repr(e) for e in c.runs.watch(run.run_id)]
        texts.append(repr(c.runs.get(run.run_id)))
        for bad in (
            lambda: c.runs.get("run_missing"),
            lambda: c.runs.create("x", idempotency_key=run.idempotency_key),
            lambda: c.runs.cancel("run_missing"),
        ):
            try:
                bad()
            except colossus.ColossusError as exc:
                texts += [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    wrong = colossus.InMemoryCredentialProvider("cb1_" + "A" * 43)
    try:
        colossus.Client.connect(options(worker, enrollment, credentials=wrong))
    except colossus.ColossusError as exc:
        texts += [str(exc), repr(exc)]
    texts += [r.getMessage() for r in caplog.records]
    texts.append(worker.log_path.read_text(errors="replace"))
    assert len(texts) > 8
    for text in texts:
        assert enrollment.bearer not in text


def test_artifact_round_trip_and_input_part(client: colossus.Client) -> None:
    assert client.server_info.has_capability("artifacts")
    data = b"colossus artifact payload\n" * 5000
    artifact = client.artifacts.upload(data, media_type="text/plain", display_name="notes.txt")
    assert artifact.size_bytes == len(data)
    downloaded = client.artifacts.download(artifact.artifact_id)
    assert downloaded.data == data and downloaded.artifact.sha256 == artifact.sha256
    if client.server_info.has_capability("attachments.text"):
        run = client.runs.create(["summarise this", artifact]).run
        assert list(client.runs.watch(run.run_id))[-1].is_terminal


def test_sidecar_restart_after_a_crash_keeps_runs(tmp_path: Path) -> None:
    import os
    import signal
    import time

    assert EXECUTABLE is not None
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    sidecar = colossus.SidecarOptions(
        executable=EXECUTABLE,
        application_id="sdk-restart",
        state_dir=state,
        retry=colossus.RetryPolicy(max_attempts=8, initial_backoff=0.2, max_backoff=1.0),
        restart_backoff=colossus.RetryPolicy(max_attempts=4, initial_backoff=0.05, max_backoff=0.1),
    )
    with colossus.Client.start_sidecar(sidecar) as c:
        run = c.runs.create("before the crash").run
        assert list(c.runs.watch(run.run_id))[-1].is_terminal
        supervisor = c._backend._supervisor  # type: ignore[union-attr]
        old_pid = supervisor.process.pid
        os.kill(old_pid, signal.SIGKILL)
        time.sleep(0.5)
        again = c.runs.get(run.run_id)  # a read: retried after the restart
        assert again.status is colossus.RunStatus.SUCCEEDED
        assert supervisor.process.pid != old_pid
        assert supervisor.restarts == 1
