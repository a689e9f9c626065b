"""Faults that rewrite what a handler answered: downloads, upload replies, ListRuns pages,
GetRun replies.

The handlers produce their genuine reply; these functions, called from
:class:`~colossus_reference_worker.faults.hooks.FaultHooks`, turn it into the
misbehaviour a case armed (docs/fault-control.md), so an SDK can prove it checks
what it receives (S3, S6).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from grpclib.const import Status

REPLY_KINDS = frozenset({"download", "upload_reply", "list_runs_repeat", "get_run_other_run"})
DOWNLOAD_MODES = frozenset({"corrupt", "short", "long", "fail"})
UPLOAD_MODES = frozenset({"size", "digest"})


@dataclass(slots=True)
class ReplyFault:
    """One armed reply rewrite; ``remaining`` counts the calls it still applies to."""

    kind: str
    mode: str = ""
    after_chunks: int = 1
    code: Status = Status.UNAVAILABLE
    reason: str | None = None
    from_call: int = 2
    remaining: int = 1


def alter_upload(fault: ReplyFault, reply: Any) -> Any:
    """The upload reply with a size or digest other than what was stored."""
    reply = copy.deepcopy(reply)
    if reply.artifact is not None:
        if fault.mode == "size":
            reply.artifact.size_bytes += 1
        else:
            digest = reply.artifact.sha256
            reply.artifact.sha256 = ("1" if digest[:1] == "0" else "0") + digest[1:]
    return reply


def other_run(reply: Any) -> Any:
    """The GetRun reply naming another (well-formed) run ID, everything else genuine."""
    reply = copy.deepcopy(reply)
    if reply.run is not None and reply.run.run_id:
        last = reply.run.run_id[-1:]
        reply.run.run_id = reply.run.run_id[:-1] + ("1" if last != "1" else "2")
    return reply


def repeat_page(request: Any, reply: Any) -> Any:
    """An empty page that hands the caller's own token back: a traversal that never ends."""
    if request is None or not request.page_token:
        return reply
    return type(reply)(runs=[], next_page_token=request.page_token)


async def rewrite_download(
    fault: ReplyFault,
    replies: AsyncIterator[Any],
    make_error: Callable[[Status, str | None], Exception],
) -> AsyncIterator[Any]:
    """Corrupts, shortens, extends or fails a download stream (metadata comes first).

    ``short`` and ``long`` also restate the metadata's SHA-256 as the hash of the bytes
    actually sent, so only a client that checks the declared size notices; ``corrupt``
    keeps the size and breaks only the digest.
    """
    if fault.mode in ("short", "long"):
        async for reply in _resized(fault.mode, replies):
            yield reply
        return
    chunks = 0
    async for reply in replies:
        if reply.chunk is None:
            yield reply
            continue
        chunks += 1
        if fault.mode == "fail" and chunks > fault.after_chunks:
            raise make_error(fault.code, fault.reason)
        if fault.mode == "corrupt" and chunks == 1 and reply.chunk:
            data = bytearray(reply.chunk)
            data[0] ^= 0xFF
            reply = type(reply)(chunk=bytes(data))
        yield reply


async def _resized(mode: str, replies: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The whole stream, one byte short or long, with a digest that matches what is sent."""
    head: Any = None
    chunks: list[bytes] = []
    async for reply in replies:
        if reply.chunk is None:
            head = reply
        else:
            chunks.append(reply.chunk)
    if mode == "short" and chunks:
        chunks[-1] = chunks[-1][:-1]
    elif mode == "long":
        chunks.append(b"\x00")
    if head is not None:
        head = copy.deepcopy(head)
        if head.artifact is not None:
            head.artifact.sha256 = hashlib.sha256(b"".join(chunks)).hexdigest()
        yield head
    for chunk in chunks:
        yield _chunk_reply(head, chunk)


def _chunk_reply(head: Any, chunk: bytes) -> Any:
    return type(head)(chunk=chunk)
