"""Calls whose deadline is already spent when they arrive (W4, W11).

A ``grpc-timeout`` of a nanosecond, or of zero, can only fail. grpclib notices it while
setting up the call and answers ``UNKNOWN`` with an error traceback in the log, so any peer,
without a valid bearer, could fill the operator's log with them. This handler answers such
a call ``DEADLINE_EXCEEDED`` at once instead, as a gRPC server should, and logs one DEBUG line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from grpclib.const import Status
from grpclib.metadata import Deadline
from grpclib.server import Handler

log = logging.getLogger(__name__)

# Less time than this left when the call arrives: nothing can be done before it ends.
_SPENT_SECONDS = 0.001
_ANSWER = [(":status", "200"), ("grpc-status", str(Status.DEADLINE_EXCEEDED.value)),
           ("grpc-message", "Deadline exceeded")]


def _spent(headers: Any) -> bool:
    for name, _ in headers:
        if name == "grpc-timeout":
            try:
                deadline = Deadline.from_headers(headers)
            except ValueError:  # grpclib refuses a malformed timeout itself
                return False
            return deadline is not None and deadline.time_remaining() < _SPENT_SECONDS
    return False


async def _answer_spent(stream: Any, release_stream: Callable[[], Any]) -> None:
    try:
        await stream.send_headers(_ANSWER, end_stream=True)
        if stream.closable:
            stream.reset_nowait()
    except Exception:  # the peer is gone already: there is no one left to tell
        log.debug("could not answer a call with a spent deadline", exc_info=True)
    finally:
        release_stream()


class SpentDeadlineHandler(Handler):
    """grpclib's request handler, answering calls with a spent deadline before dispatch."""

    def accept(self, stream: Any, headers: Any, release_stream: Callable[[], Any]) -> None:
        if not _spent(headers):
            super().accept(stream, headers, release_stream)
            return
        log.debug("refused a call whose deadline was spent on arrival")
        self.__gc_step__()
        self._tasks[stream] = self.loop.create_task(_answer_spent(stream, release_stream))
