"""Refuse a malformed request with RST_STREAM(PROTOCOL_ERROR), before any handler sees it.

RFC 9113 (8.1.1) makes a malformed request a stream error: that stream is
reset and the connection, with every other call on it, carries on. The check
runs inside h2's handling of each HEADERS block, after h2 decoded it (HPACK
state is shared by the whole connection, so every block must be decoded) and
before grpclib gets the event: grpclib never learns of a refused request, and
trailers that break the rules end the call they belong to.

A field value h2 cannot decode as ASCII (grpclib asks for ASCII headers) would
otherwise escape as an exception that drops the connection; it is refused the
same way, since no gRPC metadata can carry it. So is a body that does not match
its ``content-length`` (8.1.1), which h2 makes a connection error.
"""

from __future__ import annotations

import logging
from typing import Any

from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import RequestReceived, StreamReset, TrailersReceived
from h2.exceptions import InvalidBodyLengthError
from hyperframe.frame import DataFrame, HeadersFrame

from .request_rules import request_problem, trailer_problem

log = logging.getLogger(__name__)


def reset_malformed_requests(connection: H2Connection) -> None:
    """Install the check on one server-side h2 connection (after ``refuse_excess_streams``)."""
    receive_headers = connection._frame_dispatch_table[HeadersFrame]

    def checked(frame: HeadersFrame) -> Any:
        stream_id = frame.stream_id
        # A HEADERS frame on a stream h2 already knows carries trailers, and grpclib is
        # serving that call; on a new stream it opens a request nobody has seen yet.
        serving = stream_id in connection.streams
        problem: str | None = None
        try:
            frames, events = receive_headers(frame)
        except UnicodeDecodeError:
            if stream_id not in connection.streams:
                raise
            problem, frames, events = "a field that is not ASCII", [], []
        for event in events:
            if isinstance(event, RequestReceived):
                problem = request_problem(event.headers)  # type: ignore[arg-type]
            elif isinstance(event, TrailersReceived):
                problem = trailer_problem(event.headers)  # type: ignore[arg-type]
            if problem is not None:
                break
        if problem is None:
            return frames, events
        log.debug("reset stream %d: malformed request (%s)", stream_id, problem)
        connection.reset_stream(stream_id, ErrorCodes.PROTOCOL_ERROR)
        events = [event for event in events if getattr(event, "stream_id", None) != stream_id]
        if serving:  # tell grpclib the call is over
            events.append(StreamReset(stream_id=stream_id, error_code=ErrorCodes.PROTOCOL_ERROR,
                                      remote_reset=False))
        return frames, events

    connection._receive_headers_frame = checked  # type: ignore[method-assign]
    connection._frame_dispatch_table[HeadersFrame] = checked

    receive_data = connection._frame_dispatch_table[DataFrame]

    def counted(frame: DataFrame) -> Any:
        try:
            return receive_data(frame)
        except InvalidBodyLengthError:
            stream_id = frame.stream_id
            log.debug("reset stream %d: malformed request (body length is not its "
                      "content-length)", stream_id)
            connection.reset_stream(stream_id, ErrorCodes.PROTOCOL_ERROR)
            # grpclib never sees this data, so the connection's window is given back here.
            connection.acknowledge_received_data(frame.flow_controlled_length, stream_id)
            return [], [StreamReset(stream_id=stream_id, error_code=ErrorCodes.PROTOCOL_ERROR,
                                    remote_reset=False)]

    connection._receive_data_frame = counted  # type: ignore[method-assign]
    connection._frame_dispatch_table[DataFrame] = counted
