"""S2 idempotency and retry rules, S3 pagination, S4 capability gates, per-call options."""

from __future__ import annotations

import grpc
import pytest

import colossus_agent_client as colossus
from fake_worker import FakeWorker, make_run

U = grpc.StatusCode.UNAVAILABLE


def test_create_generates_one_key_and_exposes_it(fake: FakeWorker, client: colossus.Client) -> None:
    result = client.runs.create("hello")
    assert result.idempotency_key.startswith("py-")
    request = next(c[1] for c in fake.calls if c[0] == "CreateRun")
    assert request.idempotency_key == result.idempotency_key
    assert not result.replayed
    again = client.runs.create("hello", idempotency_key=result.idempotency_key)
    assert again.replayed and again.run.run_id == result.run.run_id


def test_create_is_never_retried_and_reports_outcome_unknown(
    fake: FakeWorker, client: colossus.Client
) -> None:
    fake.b.fail["CreateRun"] = [(U, "UNAVAILABLE")]
    with pytest.raises(colossus.OutcomeUnknownError) as info:
        client.runs.create("hello")
    assert fake.methods().count("CreateRun") == 1
    key = info.value.idempotency_key
    assert key is not None and key.startswith("py-")
    # The caller retries safely with the same key.
    assert client.runs.create("hello", idempotency_key=key).idempotency_key == key


def test_create_definite_errors_carry_the_key(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.fail["CreateRun"] = [(grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT")]
    with pytest.raises(colossus.IdempotencyConflictError) as info:
        client.runs.create("hello", idempotency_key="my-key.1")
    assert info.value.idempotency_key == "my-key.1"
    assert info.value.reason == colossus.ErrorReason.IDEMPOTENCY_CONFLICT


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate_limit_retries": 11},
        {"mode": "NOT_A_MODE"},
        {"end_user_id": "not a valid user id"},
        {"max_turns": -1},
    ],
    ids=["retries", "mode", "end_user_id", "max_turns"],
)
def test_a_create_refused_locally_carries_the_key(
    fake: FakeWorker, client: colossus.Client, kwargs: dict[str, object]
) -> None:
    # Refused before the request leaves the process, in every SDK with the key it would
    # have carried (the case idempotency.local-refusal-*).
    with pytest.raises(colossus.ColossusError) as info:
        client.runs.create("hello", idempotency_key="local-key.1", **kwargs)  # type: ignore[arg-type]
    assert info.value.idempotency_key == "local-key.1"
    with pytest.raises(colossus.ColossusError) as generated:
        client.runs.create("hello", **kwargs)  # type: ignore[arg-type]
    assert (generated.value.idempotency_key or "").startswith("py-")
    assert "CreateRun" not in fake.methods()


@pytest.mark.parametrize("method", ["CancelRun", "RespondInteraction"])
def test_other_mutations_are_never_retried(
    fake: FakeWorker, client: colossus.Client, method: str
) -> None:
    fake.b.fail[method] = [(U, "UNAVAILABLE")]
    with pytest.raises(colossus.OutcomeUnknownError):
        if method == "CancelRun":
            client.runs.cancel("run_1")
        else:
            client.runs.respond("run_1", "int_1", colossus.PromptAnswer("yes"))
    assert fake.methods().count(method) == 1


def test_reads_retry_only_unavailable(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.runs["run_1"] = make_run("run_1")
    fake.b.fail["GetRun"] = [(U, "UNAVAILABLE"), (U, None)]
    assert client.runs.get("run_1").run_id == "run_1"
    assert fake.methods().count("GetRun") == 3
    fake.b.fail["GetRun"] = [(grpc.StatusCode.INTERNAL, "INTERNAL")]
    with pytest.raises(colossus.InternalServerError):
        client.runs.get("run_1")
    assert fake.methods().count("GetRun") == 4


def test_read_retries_are_bounded(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.fail["GetRun"] = [(U, "UNAVAILABLE")] * 10
    with pytest.raises(colossus.TransportError) as info:
        client.runs.get("run_1")
    assert info.value.code is U
    assert fake.methods().count("GetRun") == 4


def test_pagination_follows_short_and_empty_pages(
    fake: FakeWorker, client: colossus.Client
) -> None:
    fake.b.pages = [
        (["run_a", "run_b", "run_c"], "1"),
        ([], "2"),
        (["run_d"], "3"),
        ([], "4"),
        ([], ""),
    ]
    ids = [r.run_id for r in client.runs.list(statuses=[colossus.RunStatus.RUNNING])]
    assert ids == ["run_a", "run_b", "run_c", "run_d"]
    tokens = [c[1].page_token for c in fake.calls if c[0] == "ListRuns"]
    assert tokens == ["", "1", "2", "3", "4"]
    assert all(list(c[1].statuses) == [2] for c in fake.calls if c[0] == "ListRuns")


def test_pagination_rejects_a_stuck_token(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.pages = [([], "1"), ([], "1")]
    with pytest.raises(colossus.ProtocolViolationError):
        list(client.runs.list())


def test_pagination_pages_view(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.pages = [(["run_a"], "1"), ([], "")]
    pages = list(client.runs.list().pages())
    assert [len(p.runs) for p in pages] == [1, 0]


async def test_async_pagination_and_reads(
    fake: FakeWorker, options: colossus.DaemonOptions
) -> None:
    fake.b.pages = [([], "1"), (["run_a", "run_b"], "2"), ([], "")]
    fake.b.runs["run_1"] = make_run("run_1")
    fake.b.fail["GetRun"] = [(U, "UNAVAILABLE")]
    async with await colossus.AsyncClient.connect(options) as client:
        ids = [r.run_id async for r in client.runs.list()]
        assert ids == ["run_a", "run_b"]
        assert (await client.runs.get("run_1")).status is colossus.RunStatus.RUNNING
        fake.b.fail["CreateRun"] = [(U, None)]
        with pytest.raises(colossus.OutcomeUnknownError) as info:
            await client.runs.create("x")
        assert info.value.idempotency_key
        cancelled = await client.runs.cancel("run_1")
        assert cancelled.status is colossus.RunStatus.CANCELLING


def test_capability_gates_refuse_locally(fake: FakeWorker, api_dir: object) -> None:
    from conftest import daemon_options

    fake.b.capabilities = []
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:  # type: ignore[arg-type]
        with pytest.raises(colossus.CapabilityMissingError) as info:
            client.runs.create(
                "x",
                plan_action=colossus.PlanAction("run_1", 1, colossus.PlanActionKind.REVISE),
                mode=colossus.RunMode.PLAN,
            )
        assert info.value.metadata["capability"] == "plans.continue"
        with pytest.raises(colossus.CapabilityMissingError):
            client.runs.create([colossus.ArtifactPart("art_1")])
        with pytest.raises(colossus.CapabilityMissingError):
            client.artifacts.upload(b"x", media_type="text/plain")
        with pytest.raises(colossus.CapabilityMissingError):
            client.artifacts.download("art_1")
        with pytest.raises(colossus.CapabilityMissingError):
            client.runs.create(
                "x",
                mode=colossus.RunMode.RESEARCH,
                research=colossus.ResearchOptions(1, (colossus.EvidenceLane.WEB,)),
            )
    fake.b.capabilities = ["artifacts"]
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:  # type: ignore[arg-type]
        with pytest.raises(colossus.CapabilityMissingError) as info:
            client.runs.create([colossus.ArtifactPart("art_1", media_type="image/png")])
        assert info.value.metadata["capability"] == "attachments.image_input"
    assert "CreateRun" not in fake.methods()


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"idempotency_key": "bad key"}, "IDEMPOTENCY_KEY_INVALID"),
        ({"max_turns": 101}, "MAX_TURNS_OUT_OF_RANGE"),
        ({"end_user_id": "bad user!"}, "FIELD_INVALID"),
        ({"session_id": "../etc"}, "FIELD_INVALID"),
        ({"traceparent": "01-abc"}, "FIELD_INVALID"),
    ],
)
def test_local_validation(
    fake: FakeWorker, client: colossus.Client, kwargs: dict[str, object], reason: str
) -> None:
    with pytest.raises(colossus.InvalidArgumentError) as info:
        client.runs.create("x", **kwargs)  # type: ignore[arg-type]
    assert info.value.reason == reason
    assert info.value.code is None
    assert "CreateRun" not in fake.methods()


def test_input_limits(fake: FakeWorker, client: colossus.Client) -> None:
    with pytest.raises(colossus.InvalidArgumentError) as info:
        client.runs.create(["a"] * 129)
    assert info.value.reason == "INPUT_TOO_MANY_PARTS"
    with pytest.raises(colossus.InvalidArgumentError) as info:
        client.runs.create([])
    with pytest.raises(colossus.InvalidArgumentError) as info:
        client.runs.list(statuses=[*list(colossus.RunStatus)[1:], colossus.RunStatus.UNSPECIFIED])


def test_traceparent_is_sent_in_request_and_metadata(
    fake: FakeWorker, client: colossus.Client
) -> None:
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    client.runs.create("x", traceparent=tp, tracestate="k=v")
    request = next(c[1] for c in fake.calls if c[0] == "CreateRun")
    assert request.trace_context.traceparent == tp
    assert request.trace_context.tracestate == "k=v"


def test_trace_context_provider_propagates(fake: FakeWorker, api_dir: object) -> None:
    from conftest import daemon_options

    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with colossus.Client.connect(
        daemon_options(fake, api_dir, trace_context=lambda: (tp, None))
    ) as client:  # type: ignore[arg-type]
        client.runs.create("x")
    create = next(c for c in fake.calls if c[0] == "CreateRun")
    assert create[2]["traceparent"] == tp
    assert create[1].trace_context.traceparent == tp


def test_per_call_timeout(fake: FakeWorker, client: colossus.Client) -> None:
    fake.b.watch_scripts = []
    fake.b.pages = [(["run_a"], "")]
    fake.b.delay["ListRuns"] = 0.5
    with pytest.raises(colossus.DeadlineExceededError):
        list(client.runs.list(timeout=0.05))
    fake.b.delay["GetRun"] = 0.5
    with pytest.raises(colossus.DeadlineExceededError):
        client.runs.get("run_1", timeout=0.05)
    fake.b.delay["CancelRun"] = 0.5
    with pytest.raises(colossus.OutcomeUnknownError) as info:
        client.runs.cancel("run_1", timeout=0.05)
    assert info.value.code is grpc.StatusCode.DEADLINE_EXCEEDED
