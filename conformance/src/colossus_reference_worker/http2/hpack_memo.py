"""Reuse the HPACK coding of header blocks that repeat exactly, in both directions.

A client polling one method sends the same header block on every call once
its HPACK table has settled: indexed fields plus a literal ``authorization``
that is never added to the table. h2 decodes each block again in pure Python,
a large share of a small call's cost. HPACK is stateful, so equal bytes mean
equal headers only while the decoding context is unchanged; a memo entry
therefore records the whole context it was decoded in (the dynamic table's
entries, its size bound and the decoder's limits) and is used only when the
context still matches exactly. Blocks that change the table when decoded
(literals with incremental indexing, size updates that resize it) are never
kept: replaying their result would skip the change.

The reply side is the same story in reverse: every OK unary answer sends the
same response headers and trailers, which encode to the same bytes while the
encoder's table (and its pending size changes) stay as they were.
"""

from __future__ import annotations

from typing import Any, cast

from hpack import Decoder, Encoder

# Bounds per connection: a peer sending endless distinct blocks only churns
# this small memo, and an entry holds at most a short list of references to
# the table's own strings, however large the decoded block.
_MAX_ENTRIES = 8
_MAX_BLOCK_BYTES = 2048
_MAX_FIELDS = 32

_Context = tuple[tuple[tuple[bytes, bytes], ...], int, int, int]


def _context(decoder: Decoder) -> _Context:
    table = decoder.header_table
    return (tuple(table.dynamic_entries), table.maxsize, decoder.max_header_list_size,
            decoder.max_allowed_table_size)


class _MemoDecoder(Decoder):
    """hpack's decoder, answering repeated blocks from a per-connection memo."""

    colossus_memo: dict[tuple[bytes, bool], tuple[_Context, list[Any]]]

    def decode(self, data: bytes, raw: bool = False) -> Any:
        if len(data) > _MAX_BLOCK_BYTES:
            return super().decode(data, raw)
        key = (bytes(data), raw)
        context = _context(self)
        kept = self.colossus_memo.get(key)
        if kept is not None and kept[0] == context:
            return list(kept[1])
        headers = list(super().decode(data, raw))
        if len(headers) <= _MAX_FIELDS and _context(self) == context:  # the table is as it was
            memo = self.colossus_memo
            memo.pop(key, None)
            if len(memo) >= _MAX_ENTRIES:
                del memo[next(iter(memo))]
            memo[key] = (context, headers)
        return list(headers)


_EncoderContext = tuple[tuple[tuple[bytes, bytes], ...], int, bool, tuple[int, ...], bool]


def _encoder_context(encoder: Encoder, huffman: bool) -> _EncoderContext:
    table = encoder.header_table
    return (tuple(table.dynamic_entries), table.maxsize, table.resized,
            tuple(encoder.table_size_changes), huffman)


class _MemoEncoder(Encoder):
    """hpack's encoder, answering repeated header lists from a per-connection memo."""

    colossus_memo: dict[tuple[Any, ...], tuple[_EncoderContext, bytes]]

    def encode(self, headers: Any, huffman: bool = True) -> bytes:
        if (not isinstance(headers, list | tuple) or len(headers) > _MAX_FIELDS
                or sum(len(name) + len(value) for name, value, *_ in headers) > _MAX_BLOCK_BYTES):
            return super().encode(headers, huffman)
        # The tuple's type too: a NeverIndexedHeaderTuple encodes differently.
        key = tuple((type(header), *header) for header in headers)
        context = _encoder_context(self, huffman)
        kept = self.colossus_memo.get(key)
        if kept is not None and kept[0] == context:
            return kept[1]
        block = super().encode(headers, huffman)
        if _encoder_context(self, huffman) == context:  # encoding left the table as it was
            memo = self.colossus_memo
            memo.pop(key, None)
            if len(memo) >= _MAX_ENTRIES:
                del memo[next(iter(memo))]
            memo[key] = (context, block)
        return block


def memoize_header_blocks(h2_connection: Any) -> None:
    """Give one h2 connection's decoder and encoder the memo (before either is used)."""
    decoder = h2_connection.decoder
    if type(decoder) is Decoder:
        memo_decoder = cast(_MemoDecoder, decoder)
        memo_decoder.__class__ = _MemoDecoder
        memo_decoder.colossus_memo = {}
    encoder = h2_connection.encoder
    if type(encoder) is Encoder:
        memo_encoder = cast(_MemoEncoder, encoder)
        memo_encoder.__class__ = _MemoEncoder
        memo_encoder.colossus_memo = {}
