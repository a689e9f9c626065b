"""A table of hostile requests, each with the one status and reason it must get (W7).

Every row goes to a real worker over a bare HTTP/2 connection (``raw_h2``), so
the table covers what grpcio would never send: truncated frames, a second
message, lying length prefixes. None may be answered ``INTERNAL``, and none may
write to the journal.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from raw_h2 import RawClient, frame

from colossus_reference_worker.wire.protowire import varint

from conftest import pb, script

RUNS = "/colossus.api.v1alpha1.RunService/"
SYSTEM = "/colossus.api.v1alpha1.SystemService/GetServerInfo"
INVALID, NOT_FOUND, EXHAUSTED, UNIMPLEMENTED = 3, 5, 8, 12
INTERNAL = 13


def field(number: int, wire: int, value: bytes) -> bytes:
    """One protobuf field; ``value`` is the raw encoding after the key (length included)."""
    return varint(number << 3 | wire) + value


def string(number: int, text: bytes) -> bytes:
    return field(number, 2, varint(len(text)) + text)


def text_part(text: str) -> bytes:
    return string(2, string(1, text.encode()))


CREATE_OK = string(1, b"key-1") + text_part("hello")


@dataclass(frozen=True)
class Row:
    """One hostile input: where it goes, its bytes, and the one answer it must get."""

    id: str
    path: str
    body: Callable[[str], bytes]  # given the ID of a run waiting on a prompt
    code: int
    reason: str
    field: str | None = None


def _msg(data: bytes) -> Callable[[str], bytes]:
    return lambda _run: frame(data)


def _respond(interaction_id: bytes, extra: bytes = b"") -> Callable[[str], bytes]:
    return lambda run: frame(string(1, run.encode()) + string(2, interaction_id) + extra)


UNKNOWN_FLOOD = field(19, 0, b"\x00") * 699_000  # ~2 MiB of tiny unknown fields
CORPUS = [
    # --- framing ---------------------------------------------------------------------------
    Row("no-message", RUNS + "GetRun", lambda _r: b"", INVALID, "FIELD_INVALID", "request"),
    Row("truncated-prefix", RUNS + "GetRun", lambda _r: b"\x00\x00\x00", INVALID,
        "FIELD_INVALID", "request"),
    Row("truncated-body", RUNS + "GetRun", lambda _r: frame(b"\x0a\x03ab", length=10), INVALID,
        "FIELD_INVALID", "request"),
    Row("second-message", RUNS + "GetRun", lambda _r: frame(string(1, b"run_a")) * 2, INVALID,
        "FIELD_INVALID", "request"),
    Row("second-message-watch", RUNS + "WatchRun", lambda _r: frame(string(1, b"run_a")) * 2,
        INVALID, "FIELD_INVALID", "request"),
    Row("compressed", RUNS + "GetRun", lambda _r: frame(string(1, b"r"), compressed=True),
        UNIMPLEMENTED, "FIELD_INVALID", "request"),
    Row("prefix-over-limit", RUNS + "GetRun", lambda _r: frame(b"", length=3 << 20), EXHAUSTED,
        "REQUEST_TOO_LARGE"),
    # --- protobuf structure ---------------------------------------------------------------------
    Row("unknown-field-flood", RUNS + "GetRun", _msg(UNKNOWN_FLOOD), INVALID, "FIELD_INVALID",
        "request"),
    Row("unknown-fields-server-info", SYSTEM, _msg(field(7, 0, b"\x01") * 17), INVALID,
        "FIELD_INVALID", "request"),
    Row("truncated-varint", RUNS + "GetRun", _msg(b"\x0a\x80"), INVALID, "FIELD_INVALID",
        "request"),
    Row("length-past-end", RUNS + "GetRun", _msg(b"\x0a\x05ab"), INVALID, "FIELD_INVALID",
        "request"),
    Row("field-number-zero", RUNS + "GetRun", _msg(b"\x00\x00"), INVALID, "FIELD_INVALID",
        "request"),
    Row("overlong-varint", RUNS + "WatchRun", _msg(b"\x10" + b"\xff" * 11 + b"\x01"), INVALID,
        "FIELD_INVALID", "request"),
    Row("group-wire-type", RUNS + "GetRun", _msg(b"\x0b\x0c"), INVALID, "FIELD_INVALID",
        "run_id"),
    Row("run-id-as-varint", RUNS + "GetRun", _msg(field(1, 0, b"\x05")), INVALID,
        "FIELD_INVALID", "run_id"),
    Row("run-id-as-fixed64", RUNS + "CancelRun", _msg(field(1, 1, b"\x00" * 8)), INVALID,
        "FIELD_INVALID", "run_id"),
    Row("run-id-not-utf8", RUNS + "GetRun", _msg(string(1, b"\xff\xfe")), INVALID,
        "FIELD_INVALID", "run_id"),
    Row("run-id-twice", RUNS + "GetRun", _msg(string(1, b"run_a") * 2), INVALID,
        "FIELD_INVALID", "run_id"),
    Row("after-sequence-as-string", RUNS + "WatchRun",
        _msg(string(1, b"run_a") + string(2, b"12")), INVALID, "FIELD_INVALID", "after_sequence"),
    Row("page-size-as-string", RUNS + "ListRuns", _msg(string(2, b"3")), INVALID,
        "FIELD_INVALID", "page_size"),
    Row("key-as-varint", RUNS + "CreateRun", _msg(field(1, 0, b"\x07") + text_part("x")),
        INVALID, "FIELD_INVALID", "idempotency_key"),
    Row("input-text-as-varint", RUNS + "CreateRun",
        _msg(string(1, b"k") + string(2, field(1, 0, b"\x01"))), INVALID, "FIELD_INVALID",
        "input[0].text"),
    Row("input-text-and-artifact", RUNS + "CreateRun",
        _msg(string(1, b"k") + string(2, string(1, b"a") + string(2, string(1, b"art_1")))),
        INVALID, "FIELD_INVALID", "input[0].artifact"),
    Row("input-unknown-flood", RUNS + "CreateRun",
        _msg(string(1, b"k") + text_part("a") + string(2, field(9, 0, b"\x00") * 17)), INVALID,
        "FIELD_INVALID", "input[1]"),
    Row("lanes-packed-flood", RUNS + "CreateRun",
        _msg(CREATE_OK + string(4, string(2, b"\x01" * 129))), INVALID, "FIELD_INVALID",
        "research.lanes"),
    Row("both-answers", RUNS + "RespondInteraction",
        _respond(b"ix_3", string(3, string(1, b"red")) + string(4, field(2, 0, b"\x01"))),
        INVALID, "FIELD_INVALID", "approval"),
    # --- the method's own limits, before decoding -------------------------------------------------
    Row("too-many-parts", RUNS + "CreateRun", _msg(string(1, b"k") + text_part("p") * 129),
        INVALID, "INPUT_TOO_MANY_PARTS", "input"),
    Row("skills", RUNS + "CreateRun", _msg(CREATE_OK + string(10, b"skill")), INVALID,
        "SKILLS_NOT_SUPPORTED", "selected_skills"),
    # Only the guard answers this: decoding would fail first on the truncated tail.
    Row("skills-then-truncated", RUNS + "CreateRun",
        _msg(CREATE_OK + string(10, b"skill") + b"\x0a\xff"), INVALID,
        "SKILLS_NOT_SUPPORTED", "selected_skills"),
    Row("ten-statuses", RUNS + "ListRuns", _msg(string(1, bytes(range(1, 11)))), INVALID,
        "STATUS_FILTER_TOO_LARGE", "statuses"),
    # --- values the decoded message carries ----------------------------------------------------------
    Row("bad-key", RUNS + "CreateRun", _msg(string(1, b"a b") + text_part("x")), INVALID,
        "IDEMPOTENCY_KEY_INVALID", "idempotency_key"),
    Row("sleep-superscript", RUNS + "CreateRun",
        _msg(string(1, b"k") + text_part(script("sleep \u00b2"))), INVALID, "FIELD_INVALID",
        "input[0].text"),
    Row("repeat-5000-digits", RUNS + "CreateRun",
        _msg(string(1, b"k") + text_part(script("repeat " + "9" * 5000 + " say x"))), INVALID,
        "FIELD_INVALID", "input[0].text"),
    Row("page-token-garbage", RUNS + "ListRuns", _msg(string(3, b"not-a-token")), INVALID,
        "PAGE_TOKEN_INVALID", "page_token"),
    Row("interaction-superscript", RUNS + "RespondInteraction",
        _respond("ix_\u00b2".encode(), string(3, string(1, b"red"))), INVALID, "FIELD_INVALID",
        "interaction_id"),
    Row("interaction-20-digits", RUNS + "RespondInteraction",
        _respond(b"ix_" + b"9" * 20, string(3, string(1, b"red"))), INVALID, "FIELD_INVALID",
        "interaction_id"),
    Row("interaction-5000-digits", RUNS + "RespondInteraction",
        _respond(b"ix_" + b"9" * 5000, string(3, string(1, b"red"))), INVALID, "FIELD_INVALID",
        "interaction_id"),
    Row("interaction-leading-zero", RUNS + "RespondInteraction",
        _respond(b"ix_03", string(3, string(1, b"red"))), INVALID, "FIELD_INVALID",
        "interaction_id"),
    Row("interaction-foreign", RUNS + "RespondInteraction",
        _respond(b"no-such-interaction", string(3, string(1, b"red"))), NOT_FOUND,
        "INTERACTION_NOT_FOUND", "interaction_id"),
]


def _journal_records(worker) -> int:
    db = sqlite3.connect(f"file:{worker.state / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    finally:
        db.close()


@pytest.fixture(scope="module")
def target(shared_worker):
    """A run of app2 waiting on a prompt, and a bare client of app2."""
    c = shared_worker.client("app2")
    run_id = c.create("hostile-target", script("ask Which colour? | red | blue")).run.run_id
    c.wait_status(run_id, pb.runs.RUN_STATUS_WAITING_FOR_INPUT)
    raw = RawClient(shared_worker.target, shared_worker.pem, shared_worker.bearers["app2"])
    yield raw, run_id
    raw.close()


@pytest.mark.parametrize("row", CORPUS, ids=[row.id for row in CORPUS])
def test_hostile_input_gets_its_one_answer(shared_worker, target, row):
    raw, run_id = target
    before = _journal_records(shared_worker)
    outcome = raw.call(row.path, row.body(run_id))
    assert outcome.grpc_status is not None, f"no gRPC status (reset {outcome.reset_code})"
    reason, metadata = outcome.error_info()
    assert (outcome.grpc_status, reason) == (row.code, row.reason), outcome.headers
    if row.field is not None:
        assert metadata.get("field") == row.field, metadata
    assert _journal_records(shared_worker) == before
    assert not raw.goaway


def test_corpus_figures(shared_worker, target):
    """Prints the corpus size and how many rows were answered INTERNAL (target 0)."""
    raw, run_id = target
    internal = sum(raw.call(row.path, row.body(run_id)).grpc_status == INTERNAL
                   for row in CORPUS)
    print(f"\nhostile-input corpus: {len(CORPUS)} inputs, {internal} answered INTERNAL")
    assert internal == 0


def test_a_few_unknown_fields_are_still_ignored(shared_worker, target):
    """Forward compatibility: a newer client's optional fields do not break a call."""
    raw, run_id = target
    newer = string(1, run_id.encode()) + field(40, 0, b"\x01") + string(41, b"future") * 2
    outcome = raw.call(RUNS + "GetRun", frame(newer))
    assert outcome.grpc_status == 0, outcome.headers
    info = raw.call(SYSTEM, frame(field(9, 5, b"\0\0\0\0") * 16))
    assert info.grpc_status == 0, info.headers
