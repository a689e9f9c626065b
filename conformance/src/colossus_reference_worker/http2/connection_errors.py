"""Connection-level rules grpclib leaves out: GOAWAY on a connection error, unknown frames ignored.

When h2 finds a connection error (a flow-control window pushed past 2^31-1,
a broken frame) it queues a GOAWAY naming the error and raises; grpclib then
closes the transport without sending it, so the peer only sees the
connection drop. The GOAWAY is written before the close here.

h2 reports a frame of a type it does not know (an extension such as
PRIORITY_UPDATE) as an event, and grpclib, which has no handler for that
event, lets the connection fail on it. RFC 9113 (4.1, 5.5) says such frames
are ignored, so they are.
"""

from __future__ import annotations

from typing import Any

from h2.events import UnknownFrameReceived
from h2.exceptions import ProtocolError


def _ignore(event: Any) -> None:
    pass


def send_goaway_on_errors(protocol: Any) -> None:
    """Make one grpclib server connection flush h2's GOAWAY before it closes on an error."""
    connection = protocol.connection
    feed = connection.feed

    def feed_then_goaway(data: bytes) -> Any:
        try:
            return feed(data)
        except ProtocolError:
            connection.flush()
            raise

    connection.feed = feed_then_goaway


def ignore_unknown_frames(protocol: Any) -> None:
    """Make one grpclib server connection ignore frames of unknown types."""
    protocol.processor.processors[UnknownFrameReceived] = _ignore
