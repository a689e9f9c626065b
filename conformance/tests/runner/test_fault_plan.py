"""The fault kinds this suite added (docs/fault-control.md): parsing and reply rewrites."""

import asyncio
import hashlib
from types import SimpleNamespace

import pytest

from colossus_reference_worker.faults.plan import FaultSpecError, parse_plan
from colossus_reference_worker.faults.replies import (
    ReplyFault,
    alter_upload,
    repeat_page,
    rewrite_download,
)
from colossus_reference_worker.faults.sidecar_wrapper import rewrite_reply


class Reply(SimpleNamespace):
    """Stands in for a DownloadArtifactResponse: either metadata or a chunk."""

    def __init__(self, chunk=None, artifact=None):
        super().__init__(chunk=chunk, artifact=artifact)


def test_new_kinds_parse():
    plan = parse_plan(
        [
            {"kind": "download", "mode": "fail", "after_chunks": 2, "code": "INTERNAL"},
            {"kind": "upload_reply", "mode": "digest"},
            {"kind": "list_runs_repeat"},
            {"kind": "get_run_other_run", "count": 2},
            {"kind": "resend_before_cursor", "watch": 2},
            {"kind": "other_run", "after_sequence": 2},
            {"kind": "after_terminal", "watch": 3},
            {"kind": "server_info", "limits": {"max_request_bytes": 65536}},
        ]
    )
    assert [f.kind for f in plan.replies] == [
        "download",
        "upload_reply",
        "list_runs_repeat",
        "get_run_other_run",
    ]
    assert plan.replies[0].after_chunks == 2
    assert plan.replies[2].from_call == 2
    assert plan.replies[3].remaining == 2
    assert plan.watch[0].kind == "resend_before_cursor" and plan.watch[0].watch == 2
    assert plan.watch[1].kind == "other_run" and plan.watch[1].after_sequence == 2
    assert plan.watch[2].kind == "after_terminal" and plan.watch[2].watch == 3
    assert plan.server_info is not None and plan.server_info.limits == (("max_request_bytes", 65536),)


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "download", "mode": "melt"},
        {"kind": "download", "mode": "corrupt", "after_chunks": 1},
        {"kind": "upload_reply", "mode": "size", "extra": 1},
        {"kind": "server_info", "limits": {"max_watches": 1}},
        {"kind": "server_info", "limits": {"max_request_bytes": 0}},
        {"kind": "other_run"},
        {"kind": "other_run", "after_sequence": 0},
        {"kind": "after_terminal", "after_sequence": 1},
    ],
)
def test_bad_new_faults_are_refused(fault):
    with pytest.raises(FaultSpecError):
        parse_plan([fault])


def _download(fault, chunks):
    async def replies():
        yield Reply(artifact=SimpleNamespace(sha256="genuine"))
        for chunk in chunks:
            yield Reply(chunk=chunk)

    async def collect():
        out = []
        async for reply in rewrite_download(fault, replies(), lambda code, reason: RuntimeError(code)):
            out.append(reply)
        return out

    return asyncio.run(collect())


def test_download_rewrites():
    chunks = [b"abc", b"def"]
    corrupt = _download(ReplyFault("download", mode="corrupt"), chunks)
    assert (
        corrupt[0].artifact.sha256 == "genuine" and corrupt[1].chunk != b"abc" and len(corrupt[1].chunk) == 3
    )
    short = _download(ReplyFault("download", mode="short"), chunks)
    assert b"".join(r.chunk for r in short[1:]) == b"abcde"
    assert short[0].artifact.sha256 == hashlib.sha256(b"abcde").hexdigest(), "only the size can tell"
    long = _download(ReplyFault("download", mode="long"), chunks)
    assert b"".join(r.chunk for r in long[1:]) == b"abcdef" + bytes(1)
    assert long[0].artifact.sha256 == hashlib.sha256(b"abcdef" + bytes(1)).hexdigest()
    with pytest.raises(RuntimeError):
        _download(ReplyFault("download", mode="fail", after_chunks=1), chunks)


def test_upload_and_list_runs_rewrites():
    reply = SimpleNamespace(artifact=SimpleNamespace(size_bytes=5, sha256="0" * 64))
    assert alter_upload(ReplyFault("upload_reply", mode="size"), reply).artifact.size_bytes == 6
    assert alter_upload(ReplyFault("upload_reply", mode="digest"), reply).artifact.sha256 == "1" + "0" * 63
    assert reply.artifact.size_bytes == 5  # the handler's own reply is not modified

    class Page(SimpleNamespace):
        pass

    page = Page(runs=["r"], next_page_token="next")
    repeated = repeat_page(SimpleNamespace(page_token="tok"), page)
    assert repeated.runs == [] and repeated.next_page_token == "tok"
    assert repeat_page(SimpleNamespace(page_token=""), page) is page


def test_bootstrap_reply_rewrites():
    reply = {"endpoint": "https://127.0.0.1:1", "certificate_sha256": "c" * 64, "bearer": "b" * 40}
    assert rewrite_reply("reply-endpoint-localhost", reply)["endpoint"] == "https://localhost:1"
    assert rewrite_reply("reply-other-pin", reply)["certificate_sha256"] == "ab" * 32
    assert rewrite_reply("reply-bad-bearer", reply)["bearer"] == "too short"
    assert rewrite_reply("reply-extra-member", reply)["debug"] is True
    assert rewrite_reply("reply-other-api-version", reply)["api_version"] == "v2alpha1"
    assert rewrite_reply("reply-bad-instance-id", reply)["instance_id"] == "wkr/../other"
    assert rewrite_reply("reply-bad-credential-id", reply)["credential_id"] == "cred with spaces"
    assert reply["bearer"] == "b" * 40


def test_get_run_other_run_names_another_run_and_nothing_else() -> None:
    from colossus_reference_worker._gen.colossus.api.v1alpha1 import GetRunResponse, Run
    from colossus_reference_worker.faults.replies import other_run

    genuine = GetRunResponse(run=Run(run_id="run_abc1", last_sequence=4))
    altered = other_run(genuine)
    assert altered.run.run_id == "run_abc2" and altered.run.last_sequence == 4
    assert genuine.run.run_id == "run_abc1"  # the handler's own reply is untouched


def test_a_shutdown_fault_names_one_unary_call():
    plan = parse_plan([{"kind": "shutdown", "rpc": "GetServerInfo"}])
    assert plan.shutdown is not None
    assert plan.shutdown.method == "SystemService/GetServerInfo"
    assert plan.shutdown.down_seconds is None  # down until the case ends
    timed = parse_plan([{"kind": "shutdown", "rpc": "RunService/GetRun", "down_seconds": 1}])
    assert timed.shutdown is not None and timed.shutdown.down_seconds == 1.0


@pytest.mark.parametrize(
    "faults",
    [
        [{"kind": "shutdown"}],
        [{"kind": "shutdown", "rpc": "WatchRun"}],
        [{"kind": "shutdown", "rpc": "Nope"}],
        [{"kind": "shutdown", "rpc": "GetRun", "down_seconds": 6}],
        [{"kind": "shutdown", "rpc": "GetRun", "down_seconds": True}],
        [{"kind": "shutdown", "rpc": "GetRun", "count": 2}],
        [{"kind": "shutdown", "rpc": "GetRun"}, {"kind": "shutdown", "rpc": "CreateRun"}],
    ],
)
def test_bad_shutdown_faults_are_refused(faults):
    with pytest.raises(FaultSpecError):
        parse_plan(faults)


def test_the_shutdown_fault_is_taken_once_by_its_method():
    from colossus_reference_worker.faults.hooks import FaultState

    state = FaultState()
    state.begin("case", parse_plan([{"kind": "shutdown", "rpc": "CreateRun"}]))
    assert state.take_shutdown("RunService/GetRun") is None
    assert state.take_shutdown("RunService/CreateRun") is not None
    assert state.take_shutdown("RunService/CreateRun") is None
    assert state.observations.snapshot()["shutdowns"] == 1


def test_shutdown_stops_the_worker_with_the_call_in_flight():
    from colossus_reference_worker.faults.hooks import FaultHooks

    hooks = FaultHooks()
    hooks.state.begin("case", parse_plan([{"kind": "shutdown", "rpc": "GetRun", "down_seconds": 0.5}]))
    begun: list[float | None] = []
    hooks.begin_shutdown = begun.append

    async def call() -> bool:
        task = asyncio.ensure_future(hooks.before_unary("RunService/GetRun"))
        await asyncio.sleep(0.05)
        in_flight = not task.done()
        task.cancel()  # what the stop does to the call
        return in_flight

    assert asyncio.run(call()) is True
    assert begun == [0.5]
    asyncio.run(hooks.before_unary("RunService/GetRun"))  # used up: later calls go through


def test_a_new_lifetime_keeps_connection_and_watch_numbers_apart():
    from colossus_reference_worker.faults.hooks import FaultHooks
    from colossus_reference_worker.worker_hooks import WatchContext

    hooks = FaultHooks()
    hooks.state.begin("case", parse_plan([]))
    hooks.on_accept(1)
    hooks.on_connection(1, "TLSv1.3", True)
    hooks.on_watch(WatchContext(call_index=1, application_id="a", run_id="run_1", after_sequence=0))
    hooks.on_accept(2)  # its handshake never ends: the worker stops first
    hooks.new_lifetime()
    assert hooks.state.observations.handshakes_in_progress() == 0
    hooks.on_accept(1)  # the listener of the new lifetime counts from 1 again
    hooks.on_connection(1, "TLSv1.3", True)
    hooks.on_rpc(1, "RunService/WatchRun", True)
    hooks.on_watch(WatchContext(call_index=1, application_id="a", run_id="run_1", after_sequence=4))
    seen = hooks.state.observations.snapshot()
    assert [c["id"] for c in seen["connections"]] == [1, 2]
    assert seen["watch_cursors"] == [0, 4]
