"""Fixtures that run the reference worker as a real subprocess and talk to it over TLS.

Clients are the SDK's raw grpcio stubs (``colossus.api.v1alpha1``), not the SDK.
The stubs are imported without running the SDK package's ``__init__``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

_SDK = Path(__file__).resolve().parents[3] / "sdk" / "python" / "src" / "colossus_agent_client"
if "colossus_agent_client" not in sys.modules:
    _pkg = types.ModuleType("colossus_agent_client")
    _pkg.__path__ = [str(_SDK)]
    sys.modules["colossus_agent_client"] = _pkg

from colossus_agent_client.api.v1alpha1 import (  # noqa: E402
    run_service_pb2,
    run_service_pb2_grpc,
    runs_pb2,
    system_pb2,
    system_pb2_grpc,
)
from google.rpc import error_details_pb2, status_pb2  # noqa: E402

from colossus_reference_worker.config import WorkerConfig  # noqa: E402
from colossus_reference_worker.credentials import Grant  # noqa: E402
from colossus_reference_worker.server import open_workspace  # noqa: E402

ALL_SCOPES = ("runs:execute", "runs:read", "runs:control", "prompts:respond",
              "approvals:respond", "artifacts:read", "artifacts:write")
TOOLS = ("filesystem.read", "shell.run", "web.fetch", "agent.delegate", "patch.apply")
# Generous limits for tests that are not about limits.
ROOMY = ("create_rate_per_second=1000", "create_rate_burst=1000",
         "create_rate_per_application_per_second=1000", "create_rate_per_application_burst=1000",
         "max_active_runs=1000", "max_active_runs_per_application=1000")

pb = types.SimpleNamespace(rs=run_service_pb2, runs=runs_pb2, sys=system_pb2)


def error_info(err: grpc.RpcError) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """The code, ErrorInfo reason and metadata of a failed call."""
    raw = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert raw, f"no status details on {err.code()}"
    status = status_pb2.Status.FromString(raw)
    # Exactly one ErrorInfo; the only other detail the worker may add is one RetryInfo.
    infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    others = [d for d in status.details if not d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(infos) == 1
    assert len(others) <= 1 and all(d.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for d in others)
    info = error_details_pb2.ErrorInfo()
    assert infos[0].Unpack(info)
    assert info.domain == "colossus.api.v1alpha1"
    return err.code(), info.reason, dict(info.metadata)


def retry_delay(err: grpc.RpcError) -> float | None:
    """The seconds of the call's ``google.rpc.RetryInfo``, or None without one."""
    raw = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin")
    status = status_pb2.Status.FromString(raw)
    for detail in status.details:
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(retry):
            return retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
    return None


def expect_error(call: Any, code: grpc.StatusCode, reason: str) -> dict[str, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    got_code, got_reason, metadata = error_info(caught.value)
    assert (got_code, got_reason) == (code, reason), caught.value.details()
    return metadata


def enroll_direct(state_dir: Path, app: str, scopes: tuple[str, ...] = ALL_SCOPES,
                  roles: tuple[str, ...] = ("default", "reviewer"),
                  tools: tuple[str, ...] = TOOLS, activate: bool = True) -> tuple[str, str]:
    """Issue a credential while the worker is stopped; returns (credential_id, bearer)."""
    ws = open_workspace(WorkerConfig(state_dir=state_dir))
    try:
        cred, bearer = ws.credentials.issue(app, Grant(scopes, roles, tools))
        if activate:
            ws.credentials.activate(cred.credential_id)
        return cred.credential_id, bearer
    finally:
        ws.close()


@dataclass
class Client:
    bearer: str
    channel: grpc.Channel
    runs: run_service_pb2_grpc.RunServiceStub
    system: system_pb2_grpc.SystemServiceStub

    @property
    def md(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.bearer}")]

    def create(self, key: str, text: str = "hello", **kw: Any) -> Any:
        req = run_service_pb2.CreateRunRequest(
            idempotency_key=key, input=[runs_pb2.InputPart(text=text)], **kw)
        return self.runs.CreateRun(req, metadata=self.md, timeout=10)

    def get(self, run_id: str) -> Any:
        return self.runs.GetRun(run_service_pb2.GetRunRequest(run_id=run_id),
                                metadata=self.md, timeout=10).run

    def watch(self, run_id: str, after: int = 0, timeout: float = 20) -> list[Any]:
        return [r.event for r in self.runs.WatchRun(
            run_service_pb2.WatchRunRequest(run_id=run_id, after_sequence=after),
            metadata=self.md, timeout=timeout)]

    def cancel(self, run_id: str) -> Any:
        return self.runs.CancelRun(run_service_pb2.CancelRunRequest(run_id=run_id),
                                   metadata=self.md, timeout=10).run

    def wait_status(self, run_id: str, *statuses: int, timeout: float = 10) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            run = self.get(run_id)
            if run.status in statuses:
                return run
            assert time.monotonic() < deadline, f"run stuck in {run.status}"
            time.sleep(0.05)

    def raw_unary(self, method: str, payload: bytes, reply: Any) -> Any:
        call = self.channel.unary_unary(
            f"/colossus.api.v1alpha1.RunService/{method}",
            request_serializer=None, response_deserializer=reply.FromString)
        return call(payload, metadata=self.md, timeout=10)


@dataclass
class Worker:
    """One worker process over one state folder."""

    root: Path
    args: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    bearers: dict[str, str] = field(default_factory=dict)
    channels: list[grpc.Channel] = field(default_factory=list)

    @property
    def public(self) -> Path:
        return self.root / "pub"

    @property
    def state(self) -> Path:
        return self.public / "state"

    @property
    def log_path(self) -> Path:
        return self.root / "worker.log"

    def start(self) -> Worker:
        assert self.proc is None
        self.public.mkdir(mode=0o700, exist_ok=True)
        (self.public / "endpoint.json").unlink(missing_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "colossus_reference_worker.cli",
                 "--public-api-dir", str(self.public), "--log-level", "INFO", *self.args],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        # A safety net, not a measurement: under a loaded CI machine (parallel lanes and
        # xdist) a cold start has taken over 15 s, and waiting longer costs nothing.
        deadline = time.monotonic() + 60
        while not (self.public / "endpoint.json").exists():
            assert self.proc.poll() is None, self.log_path.read_text()
            assert time.monotonic() < deadline, "worker did not start"
            time.sleep(0.02)
        time.sleep(0.02)
        return self

    @property
    def descriptor(self) -> dict[str, Any]:
        return json.loads((self.public / "endpoint.json").read_text())

    @property
    def pem(self) -> bytes:
        return (self.public / "certificate.pem").read_bytes()

    @property
    def target(self) -> str:
        return self.descriptor["endpoint"].removeprefix("https://")

    def enroll(self, app: str, label: str | None = None, **kw: Any) -> str:
        was_running = self.proc is not None
        if was_running:
            self.stop()
        _, bearer = enroll_direct(self.state, app, **kw)
        self.bearers[label or app] = bearer
        if was_running:
            self.start()
        return bearer

    def client(self, app_or_bearer: str) -> Client:
        bearer = self.bearers.get(app_or_bearer, app_or_bearer)
        channel = grpc.secure_channel(
            self.target, grpc.ssl_channel_credentials(root_certificates=self.pem),
            options=[("grpc.max_send_message_length", 8 * 1024 * 1024)])
        self.channels.append(channel)
        return Client(bearer, channel, run_service_pb2_grpc.RunServiceStub(channel),
                      system_pb2_grpc.SystemServiceStub(channel))

    def _close_channels(self) -> None:
        for channel in self.channels:
            channel.close()
        self.channels.clear()

    def stop(self) -> None:
        self._close_channels()
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def kill9(self) -> None:
        self._close_channels()
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def make_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    workers: list[Worker] = []

    def factory(*args: str, apps: tuple[str, ...] = ("app1", "app2"), start: bool = True,
                **enroll_kw: Any) -> Worker:
        root = tmp_path_factory.mktemp("worker")
        root.chmod(0o700)
        worker = Worker(root, args)
        worker.public.mkdir(mode=0o700)
        for app in apps:
            worker.enroll(app, **enroll_kw)
        workers.append(worker)
        return worker.start() if start else worker

    yield factory
    for worker in workers:
        worker.stop()


@pytest.fixture(scope="module")
def shared_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """One roomy worker for the functional tests of a module."""
    root = tmp_path_factory.mktemp("shared")
    root.chmod(0o700)
    args: list[str] = []
    for item in ROOMY:
        args += ["--limit", item]
    worker = Worker(root, tuple(args))
    worker.public.mkdir(mode=0o700)
    for app in ("app1", "app2"):
        worker.enroll(app)
    worker.enroll("reader", scopes=("runs:read",))
    worker.enroll("app1", label="app1-prompts-only",
                  scopes=("runs:execute", "runs:read", "prompts:respond"))
    worker.start()
    yield worker
    worker.stop()


def script(*lines: str) -> str:
    return "\n".join(("colossus-script v1", *lines))
