"""What application developers expect of the surface: lenient, well-explained arguments."""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import pytest

import colossus_agent_client as colossus
from conftest import daemon_options
from fake_worker import FakeWorker


def test_public_api_dir_accepts_str_and_expands_home(
    fake: FakeWorker, api_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(api_dir.parent))
    options = daemon_options(fake, api_dir, public_api_dir=f"~{os.sep}{api_dir.name}")
    assert options.public_api_dir == api_dir
    with colossus.Client.connect(options) as client:
        assert client.server_info.instance_id


def test_public_api_dir_of_the_wrong_type_is_a_type_error(fake: FakeWorker, api_dir: Path) -> None:
    with pytest.raises(TypeError, match="public_api_dir"):
        daemon_options(fake, api_dir, public_api_dir=42)


def test_missing_folder_error_names_the_path(fake: FakeWorker, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(colossus.DescriptorError, match=str(missing)):
        colossus.Client.connect(daemon_options(fake, missing))


def test_pin_mismatch_shows_both_pins(fake: FakeWorker, api_dir: Path) -> None:
    wrong = "ab" * 32
    with pytest.raises(colossus.PinMismatchError) as info:
        colossus.Client.connect(daemon_options(fake, api_dir, expected_certificate_sha256=wrong))
    assert wrong in str(info.value) and fake.leaf.sha256 in str(info.value)
    assert info.value.metadata == {"expected": wrong, "actual": fake.leaf.sha256}


def test_enum_arguments_by_name(client: colossus.Client) -> None:
    assert colossus.PlanAction("run_1", 1, "revise").kind is colossus.PlanActionKind.REVISE  # type: ignore[arg-type]
    answer = colossus.ApprovalAnswer("b", "approve")  # type: ignore[arg-type]
    assert answer.decision is colossus.ApprovalDecision.APPROVE
    with pytest.raises(colossus.InvalidArgumentError, match="EXECUTE, PLAN, RESEARCH"):
        client.runs.create("x", mode="fast")
    with pytest.raises(TypeError, match="RunMode"):
        client.runs.create("x", mode=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a string"):
        client.runs.list(statuses="SUCCEEDED")


def test_str_where_bytes_are_expected(client: colossus.Client) -> None:
    with pytest.raises(TypeError, match="bytes, not str"):
        client.artifacts.upload("text", media_type="text/plain")  # type: ignore[arg-type]


def test_after_sequence_beyond_uint64_is_refused_at_the_call(client: colossus.Client) -> None:
    with pytest.raises(colossus.InvalidArgumentError, match="after_sequence"):
        client.runs.watch("run_1", after_sequence=2**64)
    client.runs.watch("run_1", after_sequence=2**64 - 1).close()


def test_with_options_overrides_timeout_and_retry(
    fake: FakeWorker, client: colossus.Client
) -> None:
    fake.b.fail["GetRun"] = [(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")] * 3
    impatient = client.with_options(retry=colossus.RetryPolicy(max_attempts=1), timeout=2.0)
    with pytest.raises(colossus.TransportError):
        impatient.runs.get("run_1")
    assert fake.methods().count("GetRun") == 1
    with pytest.raises(TypeError):
        client.with_options(retry=3)  # type: ignore[arg-type]
