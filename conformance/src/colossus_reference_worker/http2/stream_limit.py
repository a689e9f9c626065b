"""Refuse the streams over a connection's concurrency limit, not the connection.

h2 treats a peer that opens more streams than ``MAX_CONCURRENT_STREAMS`` as a
connection error, and grpclib then drops the connection with every call on it.
HTTP/2 (RFC 9113, section 5.1.2) lets a server answer only the excess streams
with ``RST_STREAM(REFUSED_STREAM)``, which tells the client nothing was
processed so the call may be retried. This module makes h2 do that.
"""

from __future__ import annotations

from typing import Any

from h2.connection import H2Connection, _decode_headers
from h2.errors import ErrorCodes
from h2.stream import StreamClosedBy
from hyperframe.frame import HeadersFrame, RstStreamFrame


def refuse_excess_streams(connection: H2Connection) -> None:
    """Install the refusal on one server-side h2 connection."""
    receive_headers = connection._receive_headers_frame

    def guarded(frame: HeadersFrame) -> Any:
        stream_id = frame.stream_id
        streams = connection.streams
        # Fewer known streams than the limit means fewer open ones: the common
        # case skips counting open streams (h2 counts them again itself).
        if (len(streams) < connection.local_settings.max_concurrent_streams
                or stream_id in streams
                or stream_id % 2 != 1
                or stream_id <= connection.highest_inbound_stream_id
                or connection.open_inbound_streams < connection.local_settings.max_concurrent_streams):
            return receive_headers(frame)
        # Decode the block anyway: HPACK state is shared by the whole connection.
        _decode_headers(connection.decoder, frame.data)
        connection.highest_inbound_stream_id = stream_id
        # Later frames of this stream are then answered as on any reset stream.
        connection._closed_streams[stream_id] = StreamClosedBy.SEND_RST_STREAM
        refusal = RstStreamFrame(stream_id)
        refusal.error_code = ErrorCodes.REFUSED_STREAM
        return [refusal], []

    connection._receive_headers_frame = guarded  # type: ignore[method-assign]
    # The dispatch table holds bound methods captured at construction.
    connection._frame_dispatch_table[HeadersFrame] = guarded
