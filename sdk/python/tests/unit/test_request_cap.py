"""C7 at the boundary: a request of exactly the advertised cap passes, one byte more does not.

A case that only sends far more than the cap cannot notice an off-by-one in the check.
"""

from __future__ import annotations

import dataclasses

import pytest

from colossus_agent_client import PromptAnswer, ResourceExhaustedError
from colossus_agent_client import _models as m
from colossus_agent_client._artifacts import CHUNK_FRAMING, upload_chunk_bytes
from colossus_agent_client._convert import server_info
from colossus_agent_client._request_cap import RequestCap
from colossus_agent_client._requests import build_create_run, build_respond
from colossus_agent_client.api.v1alpha1 import artifacts_pb2, run_service_pb2, system_pb2
from fake_worker import limits


def _info(max_request_bytes: int) -> m.ServerInfo:
    pb = system_pb2.ServerInfo(
        instance_id="inst_cap",
        api_package="colossus.api.v1alpha1",
        api_version="v1alpha1",
        api_major=1,
        limits=limits(max_request_bytes=max_request_bytes),
    )
    return server_info(pb)


def _create() -> run_service_pb2.CreateRunRequest:
    return build_create_run(
        _info(0),
        idempotency_key="key-boundary-0001",
        input="x" * 5000,
        mode=m.RunMode.EXECUTE,
        research=None,
        role=None,
        max_turns=0,
        session_id=None,
        end_user_id=None,
        plan_action=None,
        trace=None,
    )


def test_a_create_of_exactly_the_cap_is_sent_and_one_byte_more_is_refused() -> None:
    request = _create()
    size = request.ByteSize()
    RequestCap(_info(size)).check(request)
    with pytest.raises(ResourceExhaustedError) as caught:
        RequestCap(_info(size - 1)).check(request)
    assert caught.value.reason == "REQUEST_TOO_LARGE"


def test_an_answer_of_exactly_the_cap_is_sent_and_one_byte_more_is_refused() -> None:
    answer = PromptAnswer(choice="y" * 3000)
    request = build_respond(_info(0), "run_cap", "int_cap", answer)
    RequestCap(_info(request.ByteSize())).check(request)
    with pytest.raises(ResourceExhaustedError):
        RequestCap(_info(request.ByteSize() - 1)).check(request)


@pytest.mark.parametrize(
    ("chunk_limit", "request_cap"),
    [(256 * 1024, 64 * 1024), (16 * 1024, 2 * 1024 * 1024), (0, 1000), (300, 0)],
)
def test_every_upload_chunk_message_fits_the_request_cap(
    chunk_limit: int, request_cap: int
) -> None:
    info = _info(request_cap)
    lim = dataclasses.replace(info.limits, max_artifact_chunk_bytes=chunk_limit)
    chunk = upload_chunk_bytes(lim)
    assert chunk > 0
    assert chunk_limit == 0 or chunk <= chunk_limit
    size = artifacts_pb2.UploadArtifactRequest(chunk=b"\0" * chunk).ByteSize()
    assert request_cap == 0 or size <= request_cap


def test_a_chunk_limit_over_the_request_cap_is_cut_to_the_cap() -> None:
    lim = dataclasses.replace(_info(64 * 1024).limits, max_artifact_chunk_bytes=256 * 1024)
    assert upload_chunk_bytes(lim) == 64 * 1024 - CHUNK_FRAMING
