"""What the per-call shortcuts remember, and that they never change an answer.

Each connection remembers which credential an ``authorization`` value proved
to be (the keyed hash is skipped on later calls), and the GetServerInfo
answer is encoded once. W4 still holds on every call: revocation refuses the
very next call of the same connection, and a value that failed is never
remembered. A unary answer is written in one go when it fits one frame and
through grpclib otherwise; h2's frame trace text is formatted only on demand.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import grpc
import h2.connection
import pytest
from hyperframe.frame import HeadersFrame

from colossus_reference_worker._gen.colossus.api.v1alpha1 import (
    GetServerInfoResponse,
    ServerInfo,
)
from colossus_reference_worker.config import WorkerConfig
from colossus_reference_worker.credentials import CredentialBook, Grant, KnownCredentials
from colossus_reference_worker.errors import ApiError
from colossus_reference_worker.handlers.pipeline import ConnectionTable, Pipeline
from colossus_reference_worker.handlers.system import SystemService
from colossus_reference_worker.http2.frame_trace import defer_frame_repr
from colossus_reference_worker.journal import Journal
from colossus_reference_worker.state import secret_file
from colossus_reference_worker.worker_hooks import NO_HOOKS, WorkerHooks

from conftest import expect_error, pb, script

READ = Grant(("runs:read",), ("default",), ())


@pytest.fixture
def book(tmp_path: Path) -> Any:
    tmp_path.chmod(0o700)
    verifier_key = secret_file(tmp_path / "verifier-key")  # secrets before the journal
    journal = Journal(tmp_path / "journal.sqlite3", secret_file(tmp_path / "journal-key"))
    yield CredentialBook(journal, verifier_key)
    journal.close()


def _active(book: CredentialBook, app: str) -> tuple[str, str]:
    cred, bearer = book.issue(app, READ)
    book.activate(cred.credential_id)
    return cred.credential_id, f"Bearer {bearer}"


def _reason(book: CredentialBook, value: str, known: KnownCredentials) -> str:
    with pytest.raises(ApiError) as refused:
        book.authenticate(value, known)
    return refused.value.reason


def test_a_remembered_credential_is_refused_on_the_next_call_after_revocation(book: Any) -> None:
    cred_id, value = _active(book, "app1")
    known = KnownCredentials()
    assert book.authenticate(value, known).credential_id == cred_id
    assert len(known) == 1
    assert book.authenticate(value, known).application_id == "app1"
    book.revoke(cred_id)
    assert _reason(book, value, known) == "CREDENTIAL_REVOKED"
    assert _reason(book, value, KnownCredentials()) == "CREDENTIAL_REVOKED"


def test_a_pending_credential_stays_refused_until_activated(book: Any) -> None:
    cred, bearer = book.issue("app1", READ)
    known = KnownCredentials()
    assert _reason(book, f"Bearer {bearer}", known) == "CREDENTIAL_NOT_ACTIVE"
    book.activate(cred.credential_id)
    assert book.authenticate(f"Bearer {bearer}", known).credential_id == cred.credential_id


def test_failed_values_are_never_remembered_and_the_memo_is_bounded(book: Any) -> None:
    _, value = _active(book, "app1")
    known = KnownCredentials()
    for bad in (value[:-1] + ("A" if value[-1] != "A" else "B"), "Basic abc", value + " "):
        assert _reason(book, bad, known) == "CREDENTIAL_INVALID"
    assert len(known) == 0
    values = [_active(book, f"app{n}")[1] for n in range(KnownCredentials.LIMIT + 3)]
    for n, other in enumerate(values):
        assert book.authenticate(other, known).application_id == f"app{n}"
        assert len(known) <= KnownCredentials.LIMIT
    # Each value still maps to its own credential after the memo was cleared and refilled.
    for n, other in enumerate(values):
        assert book.authenticate(other, known).application_id == f"app{n}"


def test_the_memo_never_shows_a_bearer(book: Any) -> None:
    _, value = _active(book, "app1")
    known = KnownCredentials()
    book.authenticate(value, known)
    secret = value.removeprefix("Bearer ")
    assert secret not in repr(known) and secret not in str(known)
    assert not hasattr(known, "__dict__")


def test_one_connection_carries_two_credentials_each_with_its_own_identity(
        shared_worker: Any) -> None:
    """Two bearers on one channel (one HTTP/2 connection) never borrow each other's grant."""
    app1 = shared_worker.client("app1")
    run_id = app1.create("cache-identity", script("say hi")).run.run_id
    app2_md = [("authorization", f"Bearer {shared_worker.bearers['app2']}")]
    for _ in range(3):
        assert app1.get(run_id).run_id == run_id
        expect_error(lambda: app1.runs.GetRun(pb.rs.GetRunRequest(run_id=run_id),
                                            metadata=app2_md, timeout=10),
                     grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")


def _service(tmp_path: Path, hooks: WorkerHooks) -> SystemService:
    config = WorkerConfig(state_dir=tmp_path)
    pipeline = Pipeline(config, None, hooks, ConnectionTable())  # type: ignore[arg-type]
    return SystemService(pipeline, "inst_cache", config.capabilities(False), False)


def test_the_encoded_server_info_is_exactly_a_fresh_encoding(tmp_path: Path) -> None:
    async def build() -> SystemService:  # the pipeline's semaphores want a running loop
        return _service(tmp_path, NO_HOOKS)

    service = asyncio.run(build())
    fresh = bytes(GetServerInfoResponse(server_info=service.server_info()))
    first = service.answer()
    assert first == fresh
    assert service.answer() is first
    assert isinstance(first, bytes)
    decoded = GetServerInfoResponse.parse(first).server_info
    assert decoded.instance_id == "inst_cache"
    assert decoded.limits.max_header_bytes == WorkerConfig(state_dir=tmp_path).limits.max_header_bytes


def test_hooks_that_rewrite_server_info_are_asked_on_every_call(tmp_path: Path) -> None:
    class Counting(WorkerHooks):
        calls = 0

        def server_info(self, info: ServerInfo) -> ServerInfo:
            Counting.calls += 1
            info.server_version = f"rewritten {Counting.calls}"
            return info

    async def build() -> SystemService:
        return _service(tmp_path, Counting())

    service = asyncio.run(build())
    answers = [service.answer() for _ in range(2)]
    assert [a.server_info.server_version for a in answers  # type: ignore[union-attr]
            ] == ["rewritten 1", "rewritten 2"]


@pytest.mark.parametrize("size", [10, 16_000, 16_400, 200_000])
def test_answers_around_one_frame_arrive_whole(shared_worker: Any, size: int) -> None:
    """Replies below one 16 KiB frame take the one-write path, larger ones grpclib's."""
    c = shared_worker.client("app1")
    text = "z" * size
    run_id = c.create(f"reply-size-{size}", script(f"say {text}")).run.run_id
    final = c.wait_status(run_id, pb.runs.RUN_STATUS_SUCCEEDED)
    assert final.result.output_text == text
    for _ in range(2):
        assert c.get(run_id) == final


def test_the_frame_trace_reads_as_before_when_formatted() -> None:
    defer_frame_repr()
    frame = HeadersFrame(1, data=b"\x82\x86", flags=("END_HEADERS",))
    deferred = h2.connection.repr(frame)  # type: ignore[attr-defined]
    record = logging.LogRecord("h2", 5, __file__, 0, "Received frame: %s", (deferred,), None)
    assert record.getMessage() == f"Received frame: {frame!r}"
    assert str(deferred) == repr(frame)
