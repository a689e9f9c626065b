"""A bounded cache of encoded ``WatchRunResponse`` frames, per run.

Replaying a long run spends most of its time decoding stored payloads and
encoding them again. This cache keeps, for recently watched runs, the encoded
frames of events ``1..n`` together with each event record's hash, least
recently used runs dropped first once the total passes a byte bound.

A cached frame is served only when the hash kept for the newest frame asked
for equals the hash of the record the caller has just verified at that
position, and only within the journal trust epoch the frames were read in:
the journal changing from outside drops everything.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

# Per-frame bookkeeping beyond the frame's own bytes (hash and list slots).
_OVERHEAD = 32 + 2 * 8 + 33


@dataclass
class _RunFrames:
    epoch: int
    frames: list[bytes] = field(default_factory=list)
    hashes: list[bytes] = field(default_factory=list)
    size: int = 0


class FrameCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._runs: OrderedDict[str, _RunFrames] = OrderedDict()
        self._size = 0

    def _entry(self, run_id: str, epoch: int) -> _RunFrames | None:
        entry = self._runs.get(run_id)
        if entry is not None and entry.epoch != epoch:
            self.drop(run_id)
            return None
        return entry

    def extent(self, run_id: str, epoch: int) -> tuple[int, bytes | None]:
        """How many leading events are cached, and the hash of the last of them."""
        entry = self._entry(run_id, epoch)
        if entry is None or not entry.frames:
            return 0, None
        return len(entry.frames), entry.hashes[-1]

    def slice(self, run_id: str, first: int, last: int, last_hash: bytes,
              epoch: int) -> list[bytes] | None:
        """Frames of events ``first..last`` if cached and anchored at ``last_hash``."""
        entry = self._entry(run_id, epoch)
        if entry is None or len(entry.frames) < last:
            return None
        if entry.hashes[last - 1] != last_hash:
            # The verified journal disagrees with what was cached: never serve it.
            self.drop(run_id)
            return None
        self._runs.move_to_end(run_id)
        return entry.frames[first - 1:last]

    def extend(self, run_id: str, first: int, frames: list[bytes], hashes: list[bytes],
               epoch: int) -> None:
        """Add the frames of events ``first, first + 1, ...`` (only right after the cached ones)."""
        entry = self._entry(run_id, epoch)
        cached = 0 if entry is None else len(entry.frames)
        if first != cached + 1:
            return
        added = sum(len(f) for f in frames) + _OVERHEAD * len(frames)
        if added + (0 if entry is None else entry.size) > self.max_bytes:
            return  # one run bigger than the whole cache is not kept
        if entry is None:
            entry = self._runs[run_id] = _RunFrames(epoch)
        entry.frames.extend(frames)
        entry.hashes.extend(hashes)
        entry.size += added
        self._size += added
        self._runs.move_to_end(run_id)
        while self._size > self.max_bytes:
            oldest = next(iter(self._runs))
            self.drop(oldest)

    def drop(self, run_id: str) -> None:
        entry = self._runs.pop(run_id, None)
        if entry is not None:
            self._size -= entry.size

    @property
    def size(self) -> int:
        return self._size
