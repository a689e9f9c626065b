"""A unary call's whole OK answer handed to the transport at once.

grpclib sends a unary answer in three steps (headers, message, trailers),
each waiting on the connection, dispatching its events and writing h2's
output separately. When nothing listens to grpclib's events and the message
fits the peer's flow-control window and one frame, the worker drives h2
itself: the same three frames, produced back to back and written once.
Anything else takes grpclib's own path.
"""

from __future__ import annotations

import time
from typing import Any

from grpclib.server import Stream

_HEADER = b"\x00"  # gRPC message prefix: not compressed


def _fast_path_open(stream: Stream[Any, Any]) -> bool:
    raw = stream._stream
    return not (
        stream._send_initial_metadata_done
        or stream._send_trailing_metadata_done
        or any(stream._dispatch._listeners.values())
        or not raw.connection.write_ready.is_set()
        or raw._transport.is_closing()
        or raw.id not in raw._h2_connection.streams
    )


async def send_unary_reply(stream: Stream[Any, Any], reply: Any) -> None:
    """Send ``reply`` (a message, or its encoded bytes) and the OK trailers."""
    payload: bytes = stream._codec.encode(reply, stream._send_type)
    if not _fast_path_open(stream):
        await stream.send_message(payload)  # the codec passes bytes through
        return
    raw = stream._stream
    h2 = raw._h2_connection
    stream_id = raw.id
    assert stream_id is not None  # a server stream always has its ID
    framed = _HEADER + len(payload).to_bytes(4, "big") + payload
    if len(framed) > min(h2.local_flow_control_window(stream_id), h2.max_outbound_frame_size):
        await stream.send_message(payload)
        return
    h2.send_headers(stream_id, [(":status", "200"), ("content-type", stream._content_type)])
    h2.send_data(stream_id, framed)
    h2.send_headers(stream_id, [("grpc-status", "0")], end_stream=True)
    raw._transport.write(h2.data_to_send())
    # What grpclib's own three steps record, so its exit path sends nothing more.
    stream._send_initial_metadata_done = True
    stream._send_message_done = True
    stream._send_trailing_metadata_done = True
    stream._messages_sent += 1
    connection = raw.connection
    connection.messages_sent += 1
    connection.last_message_sent = time.monotonic()
    raw.data_sent += len(framed)
    connection.data_sent += len(framed)
    connection.headers_send_process()
    connection.data_send_process()
