"""Requests that cannot be gRPC calls (any method but POST) get a 405 with a short text body.

grpclib answers them with a bare 405 header block. The body is for the human
or tool on the other end (curl, a browser, an HTTP/2 test suite), saying what
the server expects instead. It is sent under HTTP/2 flow control like any
data, so a peer that keeps its window shut holds only its own stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .spent_deadlines import SpentDeadlineHandler

log = logging.getLogger(__name__)

_BODY = (b"This is a gRPC server (colossus.api.v1alpha1): send POST requests "
         b"with content-type application/grpc.\n")
_HEADERS = [(":status", "405"), ("allow", "POST"),
            ("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(_BODY)))]


def _method(headers: Any) -> str | None:
    for name, value in headers:
        if name == ":method":
            return str(value)
    return None


async def _answer(stream: Any, method: str | None, release_stream: Callable[[], Any]) -> None:
    try:
        if method == "HEAD":  # a HEAD response has the headers of the GET answer, no body
            await stream.send_headers(_HEADERS, end_stream=True)
        else:
            await stream.send_headers(_HEADERS)
            await stream.send_data(_BODY, end_stream=True)
        if stream.closable:  # the request is still open: nothing more of it is wanted
            stream.reset_nowait()
    except Exception:  # the peer is gone or reset the stream: no one left to answer
        log.debug("could not answer a request that is not gRPC", exc_info=True)
    finally:
        release_stream()


class WorkerHandler(SpentDeadlineHandler):
    """The worker's request handler: requests that are not POST are answered here."""

    def accept(self, stream: Any, headers: Any, release_stream: Callable[[], Any]) -> None:
        method = _method(headers)
        if method == "POST":
            super().accept(stream, headers, release_stream)
            return
        self.__gc_step__()
        self._tasks[stream] = self.loop.create_task(_answer(stream, method, release_stream))
