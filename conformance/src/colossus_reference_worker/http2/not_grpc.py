"""Requests that cannot be gRPC calls are answered here, without resetting the request.

A method other than POST gets 405 with a short text body (grpclib sends a bare
header block), for the human or tool on the other end (curl, a browser, an
HTTP/2 test suite); a POST whose content-type is not gRPC's gets 415 with the
gRPC status grpclib would give. The body goes out under HTTP/2 flow control
like any data, so a peer that keeps its window shut holds only its own stream.

grpclib also resets such a stream (NO_ERROR) right after answering. Here the
rest of the request is read and dropped instead (grpclib acknowledges data of a
stream it released), so a body that contradicts its content-length is still
refused as the malformed request it is (``stream_errors``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from grpclib.const import Status

from .spent_deadlines import SpentDeadlineHandler

log = logging.getLogger(__name__)

_BODY = (b"This is a gRPC server (colossus.api.v1alpha1): send POST requests "
         b"with content-type application/grpc.\n")
_NOT_POST = [(":status", "405"), ("allow", "POST"),
             ("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(_BODY)))]
_GRPC_CONTENT_TYPE = "application/grpc"


def _field(headers: Any, wanted: str) -> str | None:
    for name, value in headers:
        if name == wanted:
            return str(value)
    return None


def _not_grpc(status: str, message: str) -> list[tuple[str, str]]:
    return [(":status", status), ("grpc-status", str(Status.UNKNOWN.value)),
            ("grpc-message", message)]


async def _answer(stream: Any, headers: list[tuple[str, str]], body: bytes,
                  release_stream: Callable[[], Any]) -> None:
    try:
        if body:
            await stream.send_headers(headers)
            await stream.send_data(body, end_stream=True)
        else:
            await stream.send_headers(headers, end_stream=True)
    except Exception:  # the peer is gone or reset the stream: no one left to answer
        log.debug("could not answer a request that is not gRPC", exc_info=True)
    finally:
        release_stream()


class WorkerHandler(SpentDeadlineHandler):
    """The worker's request handler: requests that are not gRPC calls are answered here."""

    def accept(self, stream: Any, headers: Any, release_stream: Callable[[], Any]) -> None:
        method = _field(headers, ":method")
        if method != "POST":
            # A HEAD response has the headers of the GET answer and no body.
            answer = (_NOT_POST, b"" if method == "HEAD" else _BODY)
        else:
            content_type = _field(headers, "content-type")
            base, _, subtype = (content_type or "").partition("+")
            if content_type is None:
                answer = (_not_grpc("415", "Missing content-type header"), b"")
            elif base != _GRPC_CONTENT_TYPE or (subtype or "proto") != self.codec.__content_subtype__:
                answer = (_not_grpc("415", "Unacceptable content-type header"), b"")
            else:
                super().accept(stream, headers, release_stream)
                return
        self.__gc_step__()
        self._tasks[stream] = self.loop.create_task(_answer(stream, *answer, release_stream))
