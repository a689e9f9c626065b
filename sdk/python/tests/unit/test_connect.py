"""Connecting: discovery, trust checks, GetServerInfo first and verified (C1-C7)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import grpc
import pytest

import colossus_agent_client as colossus
from conftest import daemon_options
from fake_worker import BEARER, INSTANCE_ID, FakeWorker, make_leaf, make_run


def test_connect_calls_get_server_info_first_with_the_bearer(
    fake: FakeWorker, client: colossus.Client
) -> None:
    info = client.server_info
    assert info.instance_id == INSTANCE_ID
    assert info.deployment_mode is colossus.DeploymentMode.SHARED_DAEMON
    assert info.has_capability("artifacts")
    assert info.limits.max_list_page_size == 3
    method, _, metadata = fake.calls[0]
    assert method == "GetServerInfo"
    assert metadata["authorization"] == f"Bearer {BEARER}"
    assert metadata["user-agent"].startswith("colossus-agent-client-python/")


def test_expected_pin_mismatch_is_refused_before_the_bearer_is_loaded(
    fake: FakeWorker, api_dir: Path
) -> None:
    loaded = []

    class Provider:
        def load_bearer(self) -> str:
            loaded.append(1)
            return BEARER

    other = make_leaf().sha256
    with pytest.raises(colossus.PinMismatchError):
        colossus.Client.connect(
            daemon_options(fake, api_dir, expected_certificate_sha256=other, credentials=Provider())
        )
    assert loaded == []
    assert fake.calls == []


def test_expected_instance_mismatch_is_refused(fake: FakeWorker, api_dir: Path) -> None:
    with pytest.raises(colossus.PinMismatchError):
        colossus.Client.connect(daemon_options(fake, api_dir, expected_instance_id="someone_else"))
    assert fake.calls == []


def test_live_leaf_must_match_even_when_files_agree(fake: FakeWorker, tmp_path: Path) -> None:
    # The discovery files and the expectation name another leaf than the one served.
    impostor = make_leaf()
    directory = fake.write_discovery(tmp_path / "d", certificate_sha256=impostor.sha256)
    (directory / "certificate.pem").write_bytes(impostor.cert_pem)
    with pytest.raises(colossus.PinMismatchError):
        colossus.Client.connect(
            daemon_options(fake, directory, expected_certificate_sha256=impostor.sha256)
        )
    assert fake.calls == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("instance_id", "another_instance"),
        ("api_package", "colossus.api.v2"),
        ("api_major", 2),
        ("deployment_mode", 2),
    ],
)
def test_server_info_mismatch_is_refused(
    fake: FakeWorker, api_dir: Path, field: str, value: object
) -> None:
    fake.b.server_info[field] = value
    with pytest.raises(colossus.IncompatibleServerError) as info:
        colossus.Client.connect(daemon_options(fake, api_dir))
    assert field in str(info.value)
    assert fake.methods() == ["GetServerInfo"]


def test_malformed_bearer_is_refused_locally(fake: FakeWorker, api_dir: Path) -> None:
    for bad in ["short", "x" * 31, "has space" + "x" * 40, "é" * 40, "x" * 257, "tab\t" + "x" * 40]:
        with pytest.raises(colossus.CredentialError) as info:
            colossus.Client.connect(daemon_options(fake, api_dir, credentials=_Raw(bad)))
        assert bad not in str(info.value)
    assert fake.calls == []


class _Raw:
    def __init__(self, value: str) -> None:
        self.value = value

    def load_bearer(self) -> str:
        return self.value


def test_provider_failure_never_leaks_its_message(fake: FakeWorker, api_dir: Path) -> None:
    class Broken:
        def load_bearer(self) -> str:
            raise RuntimeError("token=" + BEARER)

    with pytest.raises(colossus.CredentialError) as info:
        colossus.Client.connect(daemon_options(fake, api_dir, credentials=Broken()))
    assert BEARER not in str(info.value) and BEARER not in repr(info.value)
    # C8: PROVIDER_FAILED; Python chains no cause (tracebacks and logging print causes).
    assert info.value.reason == "PROVIDER_FAILED"
    assert info.value.__cause__ is None
    assert info.value.__context__ is None


def test_unauthenticated_is_typed(fake: FakeWorker, api_dir: Path) -> None:
    other = "cb1_" + "Z" * 43
    with pytest.raises(colossus.AuthenticationError) as info:
        colossus.Client.connect(daemon_options(fake, api_dir, credentials=_Raw(other)))
    assert info.value.reason == "CREDENTIAL_INVALID"
    assert info.value.code is grpc.StatusCode.UNAUTHENTICATED


def test_response_cap_follows_the_advertised_limit(fake: FakeWorker, api_dir: Path) -> None:
    fake.b.limits["max_response_bytes"] = 2000
    fake.b.runs["run_big"] = make_run("run_big")
    fake.b.runs["run_big"].role = "r" * 5000
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        with pytest.raises(colossus.ResourceExhaustedError):
            client.runs.get("run_big")


def test_request_cap_is_enforced_locally(fake: FakeWorker, api_dir: Path) -> None:
    fake.b.limits["max_request_bytes"] = 1000
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        with pytest.raises(colossus.ResourceExhaustedError) as info:
            client.runs.create("x" * 2000)
    assert info.value.reason == "REQUEST_TOO_LARGE"
    assert info.value.idempotency_key is not None
    assert "CreateRun" not in fake.methods()


def _count_channels(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from colossus_agent_client._transport import _channel

    built: list[int] = []
    real = _channel.sync_channel

    def counting(*args: object, **kwargs: object) -> grpc.Channel:
        built.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_channel, "sync_channel", counting)
    return built


def test_connect_builds_one_channel_when_the_request_cap_differs(
    fake: FakeWorker, api_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.b.limits["max_request_bytes"] = 1000
    built = _count_channels(monkeypatch)
    with colossus.Client.connect(daemon_options(fake, api_dir)) as client:
        assert client.server_info.limits.max_request_bytes == 1000
    assert len(built) == 1
    assert fake.methods() == ["GetServerInfo"]


def test_a_narrower_advertised_response_cap_rebuilds_the_channel(
    fake: FakeWorker, api_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.b.limits["max_response_bytes"] = 2000
    built = _count_channels(monkeypatch)
    with colossus.Client.connect(daemon_options(fake, api_dir)):
        pass
    assert len(built) == 2


def test_closed_client_refuses_calls(client: colossus.Client) -> None:
    client.close()
    with pytest.raises(colossus.ClientClosedError):
        client.runs.get("run_1")


async def test_async_connect(fake: FakeWorker, options: colossus.DaemonOptions) -> None:
    async with await colossus.AsyncClient.connect(options) as client:
        assert client.server_info.instance_id == INSTANCE_ID
    assert fake.methods() == ["GetServerInfo"]


async def test_async_connect_refuses_foreign_pin(fake: FakeWorker, api_dir: Path) -> None:
    with pytest.raises(colossus.PinMismatchError):
        await colossus.AsyncClient.connect(
            daemon_options(fake, api_dir, expected_certificate_sha256=make_leaf().sha256)
        )


def test_descriptor_is_reread_strictly(fake: FakeWorker, api_dir: Path) -> None:
    data = json.loads((api_dir / "endpoint.json").read_text())
    data["endpoint"] = data["endpoint"].replace("127.0.0.1", "localhost")
    (api_dir / "endpoint.json").write_text(json.dumps(data))
    os.chmod(api_dir / "endpoint.json", 0o600)
    with pytest.raises(colossus.DescriptorError):
        colossus.Client.connect(daemon_options(fake, api_dir))
