"""The composition seam other modules build on: ``start_worker`` in-process."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import grpc

from colossus_reference_worker.config import WorkerConfig
from colossus_reference_worker.credentials import Grant
from colossus_reference_worker.server import start_worker

from conftest import expect_error, pb


class _Background:
    """Runs an event loop in a thread so blocking grpcio calls can drive the worker."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def call(self, fn, *args):  # type: ignore[no-untyped-def]
        async def wrapper():  # type: ignore[no-untyped-def]
            return fn(*args)
        return self.run(wrapper())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def test_start_worker_issue_and_revoke_in_process(tmp_path: Path) -> None:
    state = tmp_path / "state"
    bg = _Background()
    try:
        worker = bg.run(start_worker(WorkerConfig(state_dir=state, deployment_mode="SIDECAR",
                                                  enable_image_input=True)))
        assert not list(tmp_path.glob("*.json"))  # no discovery files without a folder
        credential_id, bearer = bg.call(worker.issue_credential, "embedded-app",
                                        Grant(("runs:read",), ("default",), ()))
        assert bearer.startswith("cb1_") and credential_id.startswith("cred_")
        channel = grpc.secure_channel(
            worker.endpoint.removeprefix("https://"),
            grpc.ssl_channel_credentials(root_certificates=worker.certificate_pem))
        stub = pb_system_stub(channel)
        md = [("authorization", f"Bearer {bearer}")]
        info = stub.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=md).server_info
        assert info.deployment_mode == pb.sys.DEPLOYMENT_MODE_SIDECAR
        assert info.instance_id == worker.instance_id
        assert "attachments.image_input" in info.capabilities
        bg.call(worker.revoke_credential, credential_id)
        expect_error(lambda: stub.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=md),
                     grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_REVOKED")
        channel.close()
        bg.run(worker.stop())
    finally:
        bg.close()


def pb_system_stub(channel: grpc.Channel):  # type: ignore[no-untyped-def]
    from colossus_agent_client.api.v1alpha1 import system_pb2_grpc

    return system_pb2_grpc.SystemServiceStub(channel)
