"""An upload refused while chunks are still being written reports the worker's answer.

grpc.aio sets the worker's status, then overwrites it with INTERNAL when the write in
flight fails (grpc/grpc#36066). These tests drive a stand-in call through that order
and check that the first status is what the SDK reports, and that nothing else is
rewritten.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio

from colossus_agent_client._transport._first_status import FirstStatus

OVERWRITE = "Internal error from Core"


class _Call:
    """Holds a status the way grpc.aio does: the accessors are coroutines."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[Any], None]] = []
        self.status: tuple[grpc.StatusCode, str, grpc.aio.Metadata] | None = None

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        self.callbacks.append(callback)

    def finish(self, code: grpc.StatusCode, details: str, trailing: grpc.aio.Metadata) -> None:
        self.status = (code, details, trailing)
        for callback in self.callbacks:
            callback(self)

    async def code(self) -> grpc.StatusCode:
        assert self.status is not None
        return self.status[0]

    async def details(self) -> str:
        assert self.status is not None
        return self.status[1]

    async def trailing_metadata(self) -> grpc.aio.Metadata:
        assert self.status is not None
        return self.status[2]

    async def debug_error_string(self) -> str:
        return "debug"


def _internal() -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        grpc.StatusCode.INTERNAL, grpc.aio.Metadata(), grpc.aio.Metadata(), details=OVERWRITE
    )


def test_the_workers_answer_replaces_the_overwrite() -> None:
    call = _Call()
    first = FirstStatus(call)
    trailing = grpc.aio.Metadata(("grpc-status-details-bin", b"reason"))
    call.finish(grpc.StatusCode.PERMISSION_DENIED, "scope missing", trailing)
    call.finish(grpc.StatusCode.INTERNAL, OVERWRITE, grpc.aio.Metadata())  # the overwrite

    reported = first.original(_internal())

    assert isinstance(reported, grpc.aio.AioRpcError)
    assert reported.code() is grpc.StatusCode.PERMISSION_DENIED
    assert reported.details() == "scope missing"
    assert reported.trailing_metadata() == trailing


def test_an_internal_error_the_worker_sent_is_kept() -> None:
    call = _Call()
    first = FirstStatus(call)
    call.finish(grpc.StatusCode.INTERNAL, "the worker failed", grpc.aio.Metadata())
    sent = grpc.aio.AioRpcError(
        grpc.StatusCode.INTERNAL,
        grpc.aio.Metadata(),
        grpc.aio.Metadata(),
        details="the worker failed",
    )

    assert first.original(sent) is sent


def test_other_errors_pass_through() -> None:
    call = _Call()
    first = FirstStatus(call)
    call.finish(grpc.StatusCode.PERMISSION_DENIED, "scope missing", grpc.aio.Metadata())
    unavailable = grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), details="down"
    )

    assert first.original(unavailable) is unavailable


def test_without_a_recorded_status_the_error_is_unchanged() -> None:
    first = FirstStatus(_Call())  # never finished: nothing recorded
    error = _internal()

    assert first.original(error) is error


def test_a_successful_call_records_nothing() -> None:
    call = _Call()
    first = FirstStatus(call)
    call.finish(grpc.StatusCode.OK, "", grpc.aio.Metadata())
    error = _internal()

    assert first.original(error) is error
