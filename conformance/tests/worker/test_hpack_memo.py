"""The header-block memo decodes and encodes exactly what hpack's own coder does.

HPACK is stateful: the same bytes mean different headers once the dynamic
table changed. Each test feeds the same sequence of blocks to a memoizing
decoder and to a plain one and requires the same headers (or the same error)
and the same table afterwards, including blocks that repeat after the table
moved under them; the encoder side must emit the same bytes as a plain encoder.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import hpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colossus_reference_worker.http2.hpack_memo import memoize_header_blocks

# Literal without indexing, new name: the way gRPC clients send authorization.
_UNINDEXED_AUTH = bytes([0x00, 13]) + b"authorization" + bytes([11]) + b"Bearer abcd"


def _memo_connection() -> Any:
    connection = SimpleNamespace(decoder=hpack.Decoder(), encoder=hpack.Encoder())
    memoize_header_blocks(connection)
    assert type(connection.decoder) is not hpack.Decoder
    assert type(connection.encoder) is not hpack.Encoder
    return connection


def _memo_decoder() -> hpack.Decoder:
    decoder: hpack.Decoder = _memo_connection().decoder
    return decoder


def _outcome(decoder: hpack.Decoder, block: bytes) -> Any:
    try:
        return ("ok", decoder.decode(block, raw=True))
    except hpack.HPACKError as exc:
        return ("error", type(exc))


def _same_everywhere(blocks: list[bytes]) -> None:
    memo, plain = _memo_decoder(), hpack.Decoder()
    for block in blocks:
        assert _outcome(memo, block) == _outcome(plain, block), block.hex()
        assert list(memo.header_table.dynamic_entries) == list(plain.header_table.dynamic_entries)
        assert memo.header_table.maxsize == plain.header_table.maxsize


def test_a_repeated_block_is_answered_from_the_memo_and_equals_a_fresh_decode():
    encoder = hpack.Encoder()
    first = encoder.encode([(":path", "/a"), ("te", "trailers")])
    again = encoder.encode([(":path", "/a"), ("te", "trailers")]) + _UNINDEXED_AUTH
    decoder = _memo_decoder()
    decoder.decode(first, raw=True)
    once = decoder.decode(again, raw=True)
    assert len(decoder.colossus_memo) == 1  # type: ignore[attr-defined]
    twice = decoder.decode(again, raw=True)
    assert twice == once == [(b":path", b"/a"), (b"te", b"trailers"),
                             (b"authorization", b"Bearer abcd")]
    twice.append((b"x", b"y"))  # a caller changing its list leaves the memo intact
    assert decoder.decode(again, raw=True) == once


def test_indexed_bytes_decode_afresh_once_the_table_moved():
    encoder = hpack.Encoder()
    first = encoder.encode([("x-poll", "one")])  # adds x-poll: one at index 62
    indexed = bytes([0x80 | 62])
    # The peer's next block adds x-poll: two, which then sits at index 62.
    second = encoder.encode([("x-poll", "two")])
    _same_everywhere([first, indexed, indexed, second, indexed, indexed])


def test_blocks_that_change_the_table_are_never_replayed():
    encoder = hpack.Encoder()
    adding = encoder.encode([("x-a", "1")])
    # The same adding block twice grows the table twice; a replay would not.
    _same_everywhere([adding, adding, adding, bytes([0x80 | 62])])


def test_a_lowered_list_size_limit_is_not_bypassed_by_the_memo():
    encoder = hpack.Encoder()
    block = encoder.encode([("x-big", "v" * 100)]) + _UNINDEXED_AUTH
    repeat = bytes([0x80 | 62]) + _UNINDEXED_AUTH
    decoder = _memo_decoder()
    decoder.decode(block, raw=True)
    decoder.decode(repeat, raw=True)
    decoder.max_header_list_size = 50
    with pytest.raises(hpack.OversizedHeaderListError):
        decoder.decode(repeat, raw=True)


_fields = st.lists(st.tuples(st.sampled_from(["x-a", "x-b", ":path", "te"]),
                             st.sampled_from(["1", "22", "333", "trailers"])),
                   min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_fields, st.booleans(), st.sampled_from([None, 0, 64, 4096])),
                min_size=1, max_size=12))
def test_any_sequence_of_blocks_decodes_as_hpack_does(steps):
    encoder = hpack.Encoder()
    blocks: list[bytes] = []
    for fields, repeat, resize in steps:
        if resize is not None:
            encoder.header_table_size = resize
        block = encoder.encode(fields)
        blocks.append(block)
        if repeat:  # the same bytes again, whatever the table says by then
            blocks.append(block)
            blocks.append(bytes([0x80 | 62]))
    _same_everywhere(blocks)


_lists = st.lists(st.tuples(st.sampled_from([b":status", b"content-type", b"grpc-status"]),
                            st.sampled_from([b"200", b"0", b"application/grpc+proto"]),
                            st.booleans()),
                  min_size=1, max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_lists, st.sampled_from([None, 0, 60, 4096])), min_size=1,
                max_size=12))
def test_any_sequence_of_header_lists_encodes_as_hpack_does(steps):
    memo, plain = _memo_connection().encoder, hpack.Encoder()
    for fields, resize in steps:
        if resize is not None:
            memo.header_table_size = plain.header_table_size = resize
        headers = [hpack.NeverIndexedHeaderTuple(n, v) if secret else (n, v)
                   for n, v, secret in fields]
        for _ in range(2):  # the second time may come from the memo
            assert memo.encode(headers) == plain.encode(headers)
            assert (list(memo.header_table.dynamic_entries)
                    == list(plain.header_table.dynamic_entries))


def test_a_repeated_reply_header_list_is_encoded_once():
    encoder = _memo_connection().encoder
    reply = [(b":status", b"200"), (b"content-type", b"application/grpc+proto")]
    first = encoder.encode(reply)  # adds content-type to the table: not kept
    assert encoder.colossus_memo == {}
    second = encoder.encode(reply)
    assert second != first and len(encoder.colossus_memo) == 1
    assert encoder.encode(reply) == second
