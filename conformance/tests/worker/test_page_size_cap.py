"""ListRuns pages hold at most three runs whatever the caller asks for (W9).

A planted bug that took the caller's page_size as it came survived the suite, whose
listing tests asked for pages of 0 (the default) or 1.
"""

from __future__ import annotations

import uuid

from conftest import pb


def test_a_page_never_holds_more_than_three_runs(shared_worker):
    c = shared_worker.client("app1")
    for _ in range(5):
        c.create(uuid.uuid4().hex, "x")
    for size in (3, 4, 100, 2**31 - 1):
        page = c.runs.ListRuns(pb.rs.ListRunsRequest(page_size=size), metadata=c.md)
        assert len(page.runs) == 3, size
        assert page.next_page_token
    two = c.runs.ListRuns(pb.rs.ListRunsRequest(page_size=2), metadata=c.md)
    assert len(two.runs) == 2
