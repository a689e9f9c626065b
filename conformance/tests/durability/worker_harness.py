"""Helpers shared by the durability tests: a real worker process and raw clients.

The worker runs as a subprocess of the test (``python -m
colossus_reference_worker.cli``); clients are the Python SDK's generated
grpcio stubs used directly, pinned to the worker's leaf certificate.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

# Import the SDK's generated stubs without running the SDK package's __init__ (and so
# without its runtime dependencies), exactly like tests/worker does.
_SDK = Path(__file__).resolve().parents[3] / "sdk" / "python" / "src" / "colossus_agent_client"
if "colossus_agent_client" not in sys.modules:
    _pkg = types.ModuleType("colossus_agent_client")
    _pkg.__path__ = [str(_SDK)]
    sys.modules["colossus_agent_client"] = _pkg

from colossus_agent_client.api.v1alpha1 import (  # noqa: E402
    artifacts_pb2,
    artifacts_pb2_grpc,
    run_service_pb2,
    run_service_pb2_grpc,
    runs_pb2,
    system_pb2,
    system_pb2_grpc,
)

WORKER = [sys.executable, "-m", "colossus_reference_worker.cli"]
ALL_SCOPES = ("runs:execute", "runs:read", "runs:control", "prompts:respond",
              "approvals:respond", "artifacts:read", "artifacts:write")

__all__ = [
    "ALL_SCOPES", "WORKER", "Client", "FaultControl", "Worker", "artifacts_pb2",
    "error_reason", "private_dir", "run_service_pb2", "runs_pb2", "system_pb2",
]


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def error_reason(err: grpc.RpcError) -> tuple[grpc.StatusCode, str | None]:
    """The gRPC code and the ErrorInfo reason of a failed call."""
    reason = None
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    reason = info.reason
    return err.code(), reason


def enroll(public_dir: Path, app: str, scopes: tuple[str, ...] = ALL_SCOPES,
           roles: tuple[str, ...] = ("default",), tools: tuple[str, ...] = ()) -> str:
    """Enrol ``app`` while the worker is stopped; returns the bearer."""
    r, w = os.pipe()
    args = [*WORKER, "--public-api-dir", str(public_dir), "--enroll-application", app,
            "--bearer-fd", str(w), "--output", "json"]
    for s in scopes:
        args += ["--scope", s]
    for role in roles:
        args += ["--role", role]
    for tool in tools:
        args += ["--tool", tool]
    proc = subprocess.run(args, pass_fds=(w,), capture_output=True, timeout=60, check=False)
    os.close(w)
    with os.fdopen(r) as f:
        bearer = f.read().strip()
    assert proc.returncode == 0, proc.stderr.decode()
    return bearer


@dataclass
class Worker:
    """A worker subprocess serving ``public_dir``."""

    public_dir: Path
    proc: subprocess.Popen[bytes]
    endpoint: str
    certificate_pem: bytes
    certificate_sha256: str
    instance_id: str

    @classmethod
    def start(cls, public_dir: Path, *extra: str, timeout: float = 30.0) -> Worker:
        private_dir(public_dir)
        endpoint_file = public_dir / "endpoint.json"
        with contextlib.suppress(FileNotFoundError):
            endpoint_file.unlink()
        log = open(public_dir.parent / f"{public_dir.name}.worker.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen([*WORKER, "--public-api-dir", str(public_dir), *extra],
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited with {proc.returncode}")
            try:
                desc = json.loads(endpoint_file.read_text())
                if desc["pid"] == proc.pid:
                    pem = (public_dir / "certificate.pem").read_bytes()
                    return cls(public_dir, proc, desc["endpoint"], pem,
                               desc["certificate_sha256"], desc["instance_id"])
            except (FileNotFoundError, ValueError, KeyError):
                pass
            time.sleep(0.02)
        proc.kill()
        raise TimeoutError("worker did not publish its discovery files")

    @property
    def address(self) -> tuple[str, int]:
        host, _, port = self.endpoint.removeprefix("https://").rpartition(":")
        return host.strip("[]"), int(port)

    def client(self, bearer: str | None) -> Client:
        return Client(self.endpoint, self.certificate_pem, bearer)

    def terminate(self, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


class Client:
    """Raw grpcio stubs over one pinned TLS channel."""

    def __init__(self, endpoint: str, certificate_pem: bytes, bearer: str | None) -> None:
        target = endpoint.removeprefix("https://")
        creds = grpc.ssl_channel_credentials(root_certificates=certificate_pem)
        self.channel = grpc.secure_channel(target, creds, options=[
            ("grpc.max_receive_message_length", 8 * 1024 * 1024),
            ("grpc.enable_retries", 0),
        ])
        self.metadata = (("authorization", f"Bearer {bearer}"),) if bearer else ()
        self.system = system_pb2_grpc.SystemServiceStub(self.channel)
        self.runs = run_service_pb2_grpc.RunServiceStub(self.channel)
        self.artifacts = artifacts_pb2_grpc.ArtifactServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Thin wrappers that add the bearer and a deadline.

    def server_info(self) -> Any:
        return self.system.GetServerInfo(system_pb2.GetServerInfoRequest(),
                                         metadata=self.metadata, timeout=10).server_info

    def create(self, key: str, text: str, **kw: Any) -> Any:
        req = run_service_pb2.CreateRunRequest(
            idempotency_key=key, input=[runs_pb2.InputPart(text=text)], **kw)
        return self.runs.CreateRun(req, metadata=self.metadata, timeout=10)

    def get(self, run_id: str) -> Any:
        return self.runs.GetRun(run_service_pb2.GetRunRequest(run_id=run_id),
                                metadata=self.metadata, timeout=10).run

    def cancel(self, run_id: str) -> Any:
        return self.runs.CancelRun(run_service_pb2.CancelRunRequest(run_id=run_id),
                                   metadata=self.metadata, timeout=10).run

    def watch(self, run_id: str, after: int = 0, timeout: float = 30) -> Any:
        return self.runs.WatchRun(
            run_service_pb2.WatchRunRequest(run_id=run_id, after_sequence=after),
            metadata=self.metadata, timeout=timeout)

    def wait_status(self, run_id: str, statuses: set[int], timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            run = self.get(run_id)
            if run.status in statuses:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} stuck in {run.status}")
            time.sleep(0.02)


class FaultControl:
    """Client of the fault-control socket (JSON lines)."""

    def __init__(self, path: Path) -> None:
        deadline = time.monotonic() + 10
        while not path.exists():
            if time.monotonic() > deadline:
                raise TimeoutError("no fault-control socket")
            time.sleep(0.02)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rwb")

    def send(self, request: dict[str, Any]) -> dict[str, Any]:
        self.file.write(json.dumps(request).encode() + b"\n")
        self.file.flush()
        reply: dict[str, Any] = json.loads(self.file.readline())
        return reply

    def begin(self, case: str, faults: list[dict[str, Any]] | None = None) -> None:
        reply = self.send({"op": "begin_case", "case": case, "faults": faults or []})
        assert reply["ok"], reply

    def observations(self) -> dict[str, Any]:
        reply = self.send({"op": "observations"})
        assert reply["ok"], reply
        obs: dict[str, Any] = reply["observations"]
        return obs

    def end(self) -> None:
        assert self.send({"op": "end_case"})["ok"]

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def script(*lines: str) -> str:
    """A scripted-runtime program (see conformance/docs/reference-worker.md)."""
    return "\n".join(("colossus-script v1", *lines))
