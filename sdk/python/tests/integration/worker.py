"""Drives the real reference worker as a subprocess: enrol, serve, fault control, stop."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALL_SCOPES = (
    "runs:execute",
    "runs:read",
    "runs:control",
    "prompts:respond",
    "approvals:respond",
    "artifacts:read",
    "artifacts:write",
)


def find_worker() -> str | None:
    """The worker executable: $COLOSSUS_REFERENCE_WORKER, else on PATH.

    Where the worker must be present (the nox sessions set COLOSSUS_REQUIRE_WORKER=1),
    a missing one is an error rather than a reason to skip the integration tests.
    """
    explicit = os.environ.get("COLOSSUS_REFERENCE_WORKER")
    found = explicit or shutil.which("colossus-reference-worker")
    if found is None and os.environ.get("COLOSSUS_REQUIRE_WORKER") == "1":
        raise RuntimeError("COLOSSUS_REQUIRE_WORKER=1 but no colossus-reference-worker was found")
    return found


@dataclass(frozen=True)
class Enrollment:
    application_id: str
    instance_id: str
    certificate_sha256: str
    credential_id: str
    bearer: str


class ReferenceWorker:
    """One worker over one private folder. Stop it with :meth:`stop`."""

    def __init__(self, executable: str, root: Path) -> None:
        self.executable = executable
        self.root = root
        self.api_dir = root / "public-api"
        self.api_dir.mkdir(mode=0o700)
        os.chmod(self.api_dir, 0o700)
        self.control_path = root / "fault.sock"
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = root / "worker.log"

    def enroll(
        self, application_id: str = "sdk-tests", scopes: tuple[str, ...] = ALL_SCOPES
    ) -> Enrollment:
        read_fd, write_fd = os.pipe()
        argv = [
            self.executable,
            "--public-api-dir",
            str(self.api_dir),
            "--enroll-application",
            application_id,
            "--role",
            "default",
            "--bearer-fd",
            str(write_fd),
            "--output",
            "json",
        ]
        for scope in scopes:
            argv += ["--scope", scope]
        try:
            result = subprocess.run(
                argv, pass_fds=(write_fd,), capture_output=True, timeout=60, check=False
            )
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            bearer = pipe.read().decode().strip()
        if result.returncode != 0:
            raise RuntimeError(
                f"enrolment failed ({result.returncode}): {result.stderr.decode()[-2000:]}"
            )
        data = json.loads(result.stdout)
        return Enrollment(
            data["application_id"],
            data["instance_id"],
            data["certificate_sha256"],
            data["credential_id"],
            bearer,
        )

    def start(self, *extra: str, fault_control: bool = False) -> None:
        argv = [self.executable, "--public-api-dir", str(self.api_dir), *extra]
        if fault_control:
            argv += ["--fault-control-socket", str(self.control_path)]
        # The worker gets its own copy of the descriptor; ours is closed at once.
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if (self.api_dir / "endpoint.json").exists() and (
                not fault_control or self.control_path.exists()
            ):
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker exited: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)
        raise RuntimeError("the worker did not publish endpoint.json in time")

    def control(self, request: dict[str, Any]) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(self.control_path))
            s.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply: dict[str, Any] = json.loads(data)
        if not reply.get("ok"):
            raise RuntimeError(f"fault control refused {request}: {reply}")
        return reply

    def begin_case(self, case: str, faults: list[dict[str, Any]]) -> None:
        self.control({"op": "begin_case", "case": case, "faults": faults})

    def observations(self) -> dict[str, Any]:
        obs: dict[str, Any] = self.control({"op": "observations"})["observations"]
        return obs

    def end_case(self) -> None:
        self.control({"op": "end_case"})

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        if self.control_path.exists():
            self.control_path.unlink()
