"""ListRuns (W9): a bounded walk of the caller's owner index, newest first.

One call reads the application's index in batches, examines at most
``Limits.list_scan_budget`` entries and returns at most a page of runs, so its
work does not depend on other applications or on how long the journal is.
Each candidate's status comes from the cheap tail read; only runs that go on
the page are read in full (and so fully verified).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from grpclib.const import Status

from ..config import Limits
from ..credentials import Principal
from ..errors import ApiError, invalid
from .limits import Gate
from .model import STATUSES, State
from .pagination import Cursor, TokenCodec
from .runs import RunStore


class ListingHost(Protocol):
    """What ListRuns uses of the engine (``RunEngine``), named here so this module needs no
    import of the engine, which imports it."""

    limits: Limits
    lists: Gate
    tokens: TokenCodec
    store: RunStore


async def list_runs(engine: ListingHost, principal: Principal, statuses: list[int], page_size: int,
                    page_token: str) -> tuple[list[tuple[dict[str, Any], State]], str]:
    lim = engine.limits
    if len(statuses) > lim.max_list_status_filters:
        raise ApiError(
            Status.INVALID_ARGUMENT, "STATUS_FILTER_TOO_LARGE",
            f"at most {lim.max_list_status_filters} status values are accepted",
            {"field": "statuses", "limit": "max_list_status_filters"},
        )
    names = set()
    for value in statuses:
        if not 1 <= value <= len(STATUSES):
            raise invalid("statuses", "statuses holds an unknown value")
        names.add(_STATUS_BY_NUMBER[value])
    wanted = sorted(names)
    size = lim.max_list_page_size if page_size == 0 else min(page_size, lim.max_list_page_size)
    app = principal.application_id
    with engine.lists.hold(app):
        if page_token:
            cursor = engine.tokens.open(page_token, app, wanted)
            head = engine.store.owner_record(app, cursor.head_version)
            if (head is None or head.hash.hex() != cursor.head_hash
                    or not 1 <= cursor.resume_below <= cursor.head_version):
                raise ApiError(Status.INVALID_ARGUMENT, "PAGE_TOKEN_INVALID",
                               "the page token is not valid for this request",
                               {"field": "page_token"})
        else:
            head = engine.store.owner_head(app)
            if head is None:
                return [], ""
            cursor = Cursor(head.version, head.hash.hex(), head.version + 1)
        page: list[tuple[dict[str, Any], State]] = []
        next_version = cursor.resume_below - 1
        examined = 0
        upper_link: bytes | None = None
        while next_version >= 1 and examined < lim.list_scan_budget and len(page) < size:
            low = max(1, next_version - lim.list_batch_size + 1,
                      next_version - (lim.list_scan_budget - examined) + 1)
            batch = engine.store.owner_range(app, low, next_version)
            if len(batch) != next_version - low + 1 or (
                upper_link is not None and batch[-1].hash != upper_link
            ):
                raise ApiError(Status.DATA_LOSS, "JOURNAL_INTEGRITY",
                               "the journal failed its integrity check")
            for rec in reversed(batch):
                examined += 1
                next_version = rec.version - 1
                upper_link = rec.prev_hash
                run_id = rec.payload["run_id"]
                tail = engine.store.tail(run_id)
                if tail is None or tail.creation["application_id"] != app:
                    raise ApiError(Status.DATA_LOSS, "JOURNAL_INTEGRITY",
                                   "the journal failed its integrity check")
                if wanted and tail.state["status"] not in names:
                    continue
                full = engine.store.full(run_id, with_events=False)
                assert full is not None
                page.append((full.creation, full.state))
                if len(page) >= size:
                    break
            await asyncio.sleep(0)
        token = ""
        if next_version >= 1:
            token = engine.tokens.issue(app, wanted, Cursor(cursor.head_version,
                                                          cursor.head_hash, next_version + 1))
        return page, token

_STATUS_BY_NUMBER = {
    1: "QUEUED", 2: "RUNNING", 3: "WAITING_FOR_INPUT", 4: "CANCELLING", 5: "SUCCEEDED",
    6: "FAILED", 7: "CANCELLED", 8: "INTERRUPTED", 9: "OUTCOME_UNKNOWN",
}
assert set(_STATUS_BY_NUMBER.values()) == set(STATUSES)
