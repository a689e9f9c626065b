"""The replay window's bounds hold exactly whether its bytes are counted per event or lazily.

The drivers' core counts the window's bytes lazily (``size_of=len``): it appends without
accounting while the byte bound cannot be reached and counts again only when it could.
Whatever the sizes, it must remember exactly the events a per-event count remembers: the
newest events, at most ``max_events`` of them and at most ``max_bytes`` in total, and
always the newest one; a replay of any of them is compared, and an older one is refused.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colossus_agent_client as colossus
from colossus_agent_client._watch_core import Verdict, WatchCore

RUN = "run_1"
DELIVER, DROP = Verdict.DELIVER, Verdict.DROP


def _expected_window(sizes: list[int], max_events: int, max_bytes: int) -> range:
    """The delivered sequences a window of these bounds keeps: the longest fitting suffix."""
    kept, total = 0, 0
    for size in reversed(sizes):
        if kept == max_events or (kept and total + size > max_bytes):
            break
        kept, total = kept + 1, total + size
    return range(len(sizes) - kept + 1, len(sizes) + 1)


def _content(sequence: int, size: int) -> bytes:
    return sequence.to_bytes(4, "big").ljust(size, b".")[:size] if size >= 4 else b"#" * size


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=120), min_size=1, max_size=60),
    max_events=st.integers(min_value=1, max_value=12),
    max_bytes=st.integers(min_value=1, max_value=300),
    lazy=st.booleans(),
)
def test_the_window_keeps_exactly_the_newest_events_that_fit(
    sizes: list[int], max_events: int, max_bytes: int, lazy: bool
) -> None:
    core: WatchCore[bytes] = WatchCore(
        RUN,
        0,
        colossus.RetryPolicy(),
        max_events=max_events,
        max_bytes=max_bytes,
        size_of=len if lazy else None,
    )
    contents = [_content(sequence, size) for sequence, size in enumerate(sizes, start=1)]
    for sequence, data in enumerate(contents, start=1):
        if lazy:  # the drivers' path for the next output delta
            assert core.admit_next(RUN, sequence, data, len(data))
        else:
            assert core.on_event(RUN, sequence, data, terminal=False, size=len(data)) is DELIVER
        expected = _expected_window(sizes[:sequence], max_events, max_bytes)
        assert core.remembered_sequences == expected
    for sequence in core.remembered_sequences:
        data = contents[sequence - 1]
        assert core.on_event(RUN, sequence, data, terminal=False, size=len(data)) is DROP
        with pytest.raises(colossus.ProtocolViolationError, match="different content"):
            core.on_event(RUN, sequence, data + b"!", terminal=False, size=len(data) + 1)
    older = core.remembered_sequences.start - 1
    if older >= 1:
        with pytest.raises(colossus.ProtocolViolationError, match="cannot be verified"):
            core.on_event(RUN, older, contents[older - 1], terminal=False, size=sizes[older - 1])


def test_large_events_are_counted_one_by_one_and_small_ones_again_lazily() -> None:
    core: WatchCore[bytes] = WatchCore(
        RUN, 0, colossus.RetryPolicy(), max_events=8, max_bytes=1000, size_of=len
    )
    sequence = 0
    for size in [400] * 5 + [10] * 20:
        sequence += 1
        assert core.admit_next(RUN, sequence, b"x" * size, size)
    # Twenty 10-byte events after the large ones: the newest eight are kept...
    assert list(core.remembered_sequences) == list(range(sequence - 7, sequence + 1))
    # ...and per-event counting stopped once the window was back under half the bound.
    assert core._room >= 0
