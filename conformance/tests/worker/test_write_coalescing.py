"""The listener's write-coalescing transport: few large writes, nothing held back.

Small frames written in one loop turn leave as one write at the end of that turn; once
``FLUSH_AT_BYTES`` are queued they leave at once, so a long burst (a replay with an open
flow-control window) reaches the client while it is still being produced. Order and bytes
are always exactly what was written.
"""

from __future__ import annotations

import asyncio
from typing import Any

from colossus_reference_worker.listener import FLUSH_AT_BYTES, CoalescingTransport


class _Recorder(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closing = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0

    def abort(self) -> None:
        self.closing = True


def _run(scenario: Any) -> Any:
    async def main() -> Any:
        inner = _Recorder()
        return await scenario(inner, CoalescingTransport(inner))

    return asyncio.run(main())


def test_small_writes_of_one_turn_leave_together_at_its_end():
    async def scenario(inner: _Recorder, transport: CoalescingTransport) -> None:
        transport.write(b"frame-1")
        transport.write(bytearray(b"frame-2"))
        transport.writelines([b"frame-3", memoryview(b"frame-4")])
        assert inner.writes == []
        assert transport.get_write_buffer_size() == 4 * len(b"frame-1")
        await asyncio.sleep(0)
        assert inner.writes == [b"frame-1frame-2frame-3frame-4"]
        assert transport.get_write_buffer_size() == 0

    _run(scenario)


def test_a_long_burst_leaves_in_parts_while_it_is_written():
    frame = bytes(range(256)) * 16  # 4 KiB
    frames_per_flush = FLUSH_AT_BYTES // len(frame)

    async def scenario(inner: _Recorder, transport: CoalescingTransport) -> None:
        sent = [frame[:-1] + bytes([i % 256]) for i in range(3 * frames_per_flush + 5)]
        for index, data in enumerate(sent, start=1):
            transport.write(data)
            # Never more than the flush size waits for the end of the turn.
            assert transport.get_write_buffer_size() < FLUSH_AT_BYTES
            assert len(inner.writes) == index // frames_per_flush
        await asyncio.sleep(0)
        assert [len(w) for w in inner.writes] == [FLUSH_AT_BYTES] * 3 + [5 * len(frame)]
        assert b"".join(inner.writes) == b"".join(sent)

    _run(scenario)


def test_abort_drops_what_is_queued():
    async def scenario(inner: _Recorder, transport: CoalescingTransport) -> None:
        transport.write(b"never sent")
        transport.abort()
        assert transport.get_write_buffer_size() == 0
        await asyncio.sleep(0)
        assert inner.writes == []

    _run(scenario)
