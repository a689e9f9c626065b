"""S5: one mapping from gRPC code + ErrorInfo reason to the typed hierarchy."""

from __future__ import annotations

import grpc
import pytest

import colossus_agent_client as colossus
from colossus_agent_client._status import map_status
from fake_worker import status_details


def _trailers(code: grpc.StatusCode, reason: str, **kw: object) -> tuple[tuple[str, bytes], ...]:
    return (("grpc-status-details-bin", status_details(code, reason, **kw)),)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_REVOKED", colossus.AuthenticationError),
        (grpc.StatusCode.PERMISSION_DENIED, "SCOPE_MISSING", colossus.PermissionDeniedError),
        (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND", colossus.NotFoundError),
        (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID", colossus.InvalidArgumentError),
        (grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT", colossus.IdempotencyConflictError),
        (grpc.StatusCode.FAILED_PRECONDITION, "RUN_TERMINAL", colossus.FailedPreconditionError),
        (
            grpc.StatusCode.FAILED_PRECONDITION,
            "CAPABILITY_NOT_SUPPORTED",
            colossus.CapabilityMissingError,
        ),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "WATCH_LIMIT", colossus.ResourceExhaustedError),
        (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE", colossus.TransportError),
        (grpc.StatusCode.DATA_LOSS, "JOURNAL_INTEGRITY", colossus.DataLossError),
        (grpc.StatusCode.INTERNAL, "INTERNAL", colossus.InternalServerError),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "", colossus.DeadlineExceededError),
        (grpc.StatusCode.INVALID_ARGUMENT, "SOME_FUTURE_REASON", colossus.InvalidArgumentError),
    ],
)
def test_mapping(code: grpc.StatusCode, reason: str, cls: type[colossus.ColossusError]) -> None:
    trailers = _trailers(code, reason, metadata={"field": "input"}) if reason else ()
    error = map_status(code, "text", trailers)
    assert type(error) is cls
    assert error.code is code
    assert error.reason == (reason or None)
    if reason:
        assert error.metadata == {"field": "input"}
    assert isinstance(error, colossus.ColossusError)


def test_foreign_domain_and_garbage_fall_back_to_the_code() -> None:
    foreign = (
        (
            "grpc-status-details-bin",
            status_details(
                grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_CONFLICT", domain="example.com"
            ),
        ),
    )
    error = map_status(grpc.StatusCode.ALREADY_EXISTS, "x", foreign)
    assert type(error) is colossus.ApiError and error.reason is None
    junk = (("grpc-status-details-bin", b"\xff\x00garbage"),)
    assert map_status(grpc.StatusCode.NOT_FOUND, "x", junk).reason is None
    assert map_status(grpc.StatusCode.NOT_FOUND, "x", None).reason is None


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.CANCELLED,
    ],
)
def test_ambiguous_mutation_failures_are_outcome_unknown(code: grpc.StatusCode) -> None:
    error = map_status(code, "x", (), mutation=True, idempotency_key="k1")
    assert isinstance(error, colossus.OutcomeUnknownError)
    assert error.idempotency_key == "k1"
    assert "idempotency_key=k1" in str(error)


def test_definite_mutation_failures_keep_their_type() -> None:
    error = map_status(
        grpc.StatusCode.INVALID_ARGUMENT,
        "x",
        _trailers(grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID"),
        mutation=True,
    )
    assert type(error) is colossus.InvalidArgumentError


def test_error_is_data() -> None:
    error = colossus.WatchGapError("gap", reason="WATCH_GAP", metadata={"expected": "2"})
    assert isinstance(error, colossus.ProtocolViolationError)
    assert error.metadata["expected"] == "2"
    with pytest.raises(TypeError):
        error.metadata["x"] = "y"  # type: ignore[index]
    assert "reason=WATCH_GAP" in str(error) and "WatchGapError" in repr(error)


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (colossus.TransportError("x", code=grpc.StatusCode.UNAVAILABLE), True),
        (colossus.OutcomeUnknownError("x", code=grpc.StatusCode.UNAVAILABLE), False),
        (colossus.DeadlineExceededError("x", code=grpc.StatusCode.DEADLINE_EXCEEDED), False),
        (
            colossus.ResourceExhaustedError(
                "x", code=grpc.StatusCode.RESOURCE_EXHAUSTED, reason="CREATE_RATE_LIMIT"
            ),
            True,
        ),
        (
            colossus.ResourceExhaustedError(
                "x", code=grpc.StatusCode.RESOURCE_EXHAUSTED, reason="WATCH_LIMIT"
            ),
            False,
        ),
        (colossus.InvalidArgumentError("x", reason="FIELD_INVALID"), False),
        (colossus.TransportError("x"), False),
    ],
)
def test_retryable_is_gos_rule(error: colossus.ColossusError, retryable: bool) -> None:
    # Go's Error.Retryable and Rust's Error::is_retryable: an UNAVAILABLE read, or a create
    # refused under CREATE_RATE_LIMIT; nothing else.
    assert error.retryable is retryable


def test_a_malformed_provisioned_identity_is_field_invalid() -> None:
    # S9: FIELD_INVALID naming the option, as Go, TypeScript and Rust report it (the case
    # pin-checks.c3.provisioned-pin-malformed).
    for kwargs, field in (
        ({"expected_certificate_sha256": "AB" * 32}, "expected_certificate_sha256"),
        ({"expected_instance_id": "bad id"}, "expected_instance_id"),
    ):
        options = {
            "public_api_dir": "/nonexistent",
            "expected_instance_id": "wkr_1",
            "expected_certificate_sha256": "ab" * 32,
            "credentials": colossus.InMemoryCredentialProvider("cb1_" + "A" * 43),
            **kwargs,
        }
        with pytest.raises(colossus.InvalidArgumentError) as info:
            colossus.DaemonOptions(**options)  # type: ignore[arg-type]
        assert info.value.reason == "FIELD_INVALID"
        assert info.value.metadata["field"] == field


@pytest.mark.parametrize(
    "text",
    [
        "Received message larger than max (6050 vs. 4096)",
        "Stream removed (CLIENT: Received message larger than max (10003 vs. 4096))",
    ],
)
@pytest.mark.parametrize("mutation", [False, True])
def test_grpcios_refusal_of_a_response_over_the_cap_is_local(text: str, mutation: bool) -> None:
    error = map_status(grpc.StatusCode.RESOURCE_EXHAUSTED, text, (), mutation=mutation)
    assert type(error) is colossus.ResourceExhaustedError
    assert error.code is None
    assert error.reason == colossus.LocalReason.RESPONSE_TOO_LARGE == "RESPONSE_TOO_LARGE"
    assert str(error).startswith("a response is larger than the accepted response cap of 4096")
    assert error.metadata == {"limit": "4096"}, "the cap, as the other SDKs report it"
    assert not error.retryable


def test_the_workers_resource_exhausted_is_not_a_response_over_the_cap() -> None:
    trailers = _trailers(grpc.StatusCode.RESOURCE_EXHAUSTED, "WATCH_LIMIT")
    text = "Received message larger than max (the worker's words)"
    error = map_status(grpc.StatusCode.RESOURCE_EXHAUSTED, text, trailers)
    assert (error.code, error.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "WATCH_LIMIT")
