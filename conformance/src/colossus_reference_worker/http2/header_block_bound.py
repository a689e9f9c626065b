"""A bound on the bytes of one header block, counted across its CONTINUATION frames (W11).

h2 gathers a HEADERS frame and its CONTINUATION frames until END_HEADERS
before decoding anything, bounded only by a count of 64 frames. A peer that
never ends the block makes the worker hold and copy it all for nothing. The
worker advertises a 16 KiB header limit, and an encoder that picks the
shorter of a literal and its Huffman code never makes a block larger than the
header list it decodes to (a field's encoding costs a few bytes over its name
and value, the list counts 32), so a block past the limit can only be refused:
the connection is closed with GOAWAY(ENHANCE_YOUR_CALM) as soon as the frame
that crosses the bound arrives.
"""

from __future__ import annotations

from typing import Any, cast

from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.exceptions import ProtocolError
from h2.frame_buffer import FrameBuffer
from hyperframe.frame import ContinuationFrame, HeadersFrame


class HeaderBlockTooLarge(ProtocolError):
    """A connection error: one header block grew past the worker's bound."""

    error_code = ErrorCodes.ENHANCE_YOUR_CALM


class _BoundedFrameBuffer(FrameBuffer):
    colossus_block_limit: int
    colossus_block_bytes: int

    def _update_header_buffer(self, f: Any) -> Any:
        if isinstance(f, HeadersFrame | ContinuationFrame):
            first = isinstance(f, HeadersFrame)
            total = len(f.data) + (0 if first else self.colossus_block_bytes)
            if total > self.colossus_block_limit:
                raise HeaderBlockTooLarge(
                    f"header block over {self.colossus_block_limit} bytes")
            self.colossus_block_bytes = 0 if "END_HEADERS" in f.flags else total
        return super()._update_header_buffer(f)


def bound_header_blocks(connection: H2Connection, limit: int) -> None:
    """Refuse, on one h2 connection, any header block of more than ``limit`` bytes."""
    buffer = connection.incoming_buffer
    if type(buffer) is FrameBuffer:
        bounded = cast(_BoundedFrameBuffer, buffer)
        bounded.__class__ = _BoundedFrameBuffer
        bounded.colossus_block_limit = limit
        bounded.colossus_block_bytes = 0
