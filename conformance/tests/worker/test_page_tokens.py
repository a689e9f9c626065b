"""ListRuns page tokens refuse every spelling but the one the worker issued (W9)."""

from __future__ import annotations

import uuid

import grpc

from conftest import ROOMY, error_info, expect_error, pb, script

S = pb.runs
OK = grpc.StatusCode


def _page(client, token="", statuses=()):
    return client.runs.ListRuns(pb.rs.ListRunsRequest(
        page_size=1, page_token=token, statuses=list(statuses)), metadata=client.md)


def _alterations(token: str) -> set[str]:
    """Every one-bit change of every character, plus re-spellings base64 decoders forgive."""
    variants = set()
    for index, char in enumerate(token):
        for bit in range(7):
            changed = chr(ord(char) ^ (1 << bit))
            if changed.isprintable() and changed != " ":
                variants.add(token[:index] + changed + token[index + 1:])
    variants |= {
        token + "=", token + "==", token + "....", token[:4] + "...." + token[4:],
        token[:4] + "\\n" + token[4:], token.replace("-", "+").replace("_", "/"), token + "A",
        token[:-1], "",
    }
    variants.discard(token)
    variants.discard("")  # an empty token asks for the first page
    return variants


def test_every_altered_token_is_refused(shared_worker):
    c = shared_worker.client("app1")
    for _ in range(3):
        c.create(uuid.uuid4().hex, "x")
    token = _page(c).next_page_token
    assert token
    accepted = []
    for variant in sorted(_alterations(token)):
        try:
            _page(c, variant)
        except grpc.RpcError as err:
            code, reason, metadata = error_info(err)
            assert (code, reason, metadata) == (
                OK.INVALID_ARGUMENT, "PAGE_TOKEN_INVALID", {"field": "page_token"}), variant
        else:
            accepted.append(variant)
    assert accepted == []
    assert _page(c, token).runs  # the genuine token still works


def test_token_binds_the_canonical_filter_and_the_application(shared_worker):
    c = shared_worker.client("app1")
    for _ in range(3):
        c.create(uuid.uuid4().hex, "x")
    both = (S.RUN_STATUS_SUCCEEDED, S.RUN_STATUS_QUEUED)
    token = _page(c, statuses=both).next_page_token
    assert token
    # The same set of statuses in another order or with repeats is the same filter.
    _page(c, token, statuses=both[::-1])
    _page(c, token, statuses=(*both, S.RUN_STATUS_QUEUED))
    for other in ((S.RUN_STATUS_SUCCEEDED,), (), (*both, S.RUN_STATUS_FAILED)):
        expect_error(lambda o=other: _page(c, token, statuses=o), OK.INVALID_ARGUMENT,
                     "PAGE_TOKEN_INVALID")
    expect_error(lambda: _page(shared_worker.client("app2"), token, statuses=both),
                 OK.INVALID_ARGUMENT, "PAGE_TOKEN_INVALID")


def test_a_traversal_continues_across_a_restart_and_a_crash(make_worker):
    # A caller paging through its runs while the worker restarts (an SDK iterator
    # across a daemon upgrade, say) keeps its place: the token's key and the index it
    # names are durable, and runs created meanwhile still do not shift the traversal.
    roomy = [a for item in ROOMY for a in ("--limit", item)]
    worker = make_worker(*roomy)
    client = worker.client("app1")
    created = [client.create(f"k{i}", script("say a")).run.run_id for i in range(7)]
    newest_first = created[::-1]
    first = client.runs.ListRuns(pb.rs.ListRunsRequest(), metadata=client.md, timeout=10)
    assert [r.run_id for r in first.runs] == newest_first[:3] and first.next_page_token
    worker.restart()
    client = worker.client("app1")
    client.create("after-page-one", script("say a"))
    second = client.runs.ListRuns(pb.rs.ListRunsRequest(page_token=first.next_page_token),
                                  metadata=client.md, timeout=10)
    assert [r.run_id for r in second.runs] == newest_first[3:6]
    worker.kill9()
    worker.start()
    client = worker.client("app1")
    third = client.runs.ListRuns(pb.rs.ListRunsRequest(page_token=second.next_page_token),
                                 metadata=client.md, timeout=10)
    assert [r.run_id for r in third.runs] == newest_first[6:] and not third.next_page_token
