"""One worker under test on the daemon route: enrol, start, stop gracefully, kill.

Everything goes through the manifest's commands and the public discovery files; nothing
here knows which worker it drives. Applications are enrolled while the worker is stopped
(W3), each bearer arriving on an inherited pipe and kept in memory only.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..worker import Enrolment, WorkerError
from .manifest import WorkerManifest

START_SECONDS = 60.0
STOP_SECONDS = 15.0


class DaemonWorker:
    """A worker process on a private state folder and public API folder of its own."""

    def __init__(
        self,
        manifest: WorkerManifest,
        name: str,
        scratch: Path,
        log_dir: Path,
        limits: Mapping[str, str] | None = None,
    ):
        self.manifest = manifest
        self.name = name
        self.root = Path(tempfile.mkdtemp(prefix=f"server-{name}-", dir=scratch))
        self.state_dir = self.root / "state"
        self.public_api_dir = self.root / "public-api"
        for folder in (self.state_dir, self.public_api_dir):
            folder.mkdir(mode=0o700)
        self.log_path = log_dir / f"server-worker-{name}.log"
        self.limits = dict(limits or {})
        self.enrolments: dict[str, Enrolment] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.endpoint = ""
        self.starts = 0

    # -- enrolment -------------------------------------------------------------

    def enrol_all(self, grants: Mapping[str, Sequence[str]]) -> None:
        """Enrols every application (``application -> scopes``), one at a time: an enrolment
        may hold the state folder's lock, as the reference worker's does."""
        for application, scopes in sorted(grants.items()):
            self.enrolments[application] = self.enrol(application, scopes)

    def enrol(self, application: str, scopes: Sequence[str]) -> Enrolment:
        if self.proc is not None:
            raise WorkerError("enrolment needs the worker stopped")
        read_fd, write_fd = os.pipe()
        argv = self.manifest.enrol_argv(self.state_dir, self.public_api_dir, application, scopes, write_fd)
        try:
            with open(self.log_path, "ab") as log:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, pass_fds=(write_fd,)
                )
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            bearer = pipe.read(4096).decode("ascii", "replace").strip()
        out, _ = proc.communicate(timeout=START_SECONDS)
        if proc.returncode != 0 or not bearer:
            raise WorkerError(
                f"enrolment of {application} failed (exit {proc.returncode}); see {self.log_path}"
            )
        try:
            info = json.loads(out.decode().strip().splitlines()[-1])
            return Enrolment(
                application_id=application,
                credential_id=info["credential_id"],
                instance_id=info["instance_id"],
                certificate_sha256=info["certificate_sha256"],
                bearer=bearer,
            )
        except (ValueError, IndexError, KeyError) as exc:
            raise WorkerError(f"enrolment of {application}: no JSON line with the identity ({exc})") from exc

    # -- process ---------------------------------------------------------------

    def start(self) -> None:
        """Starts the worker and waits until endpoint.json names this process."""
        argv = self.manifest.start_argv(self.state_dir, self.public_api_dir, self.limits)
        with open(self.log_path, "ab") as log:
            log.write(f"== start {' '.join(argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise WorkerError(f"worker {self.name} exited with {code}; see {self.log_path}")
            descriptor = self.descriptor()
            endpoint = descriptor.get("endpoint")
            if descriptor.get("pid") == self.proc.pid and isinstance(endpoint, str):
                self.endpoint = endpoint
                self.starts += 1
                return
            time.sleep(0.05)
        self.kill()
        raise WorkerError(f"worker {self.name} did not publish endpoint.json in time; see {self.log_path}")

    def stop(self) -> int | None:
        """Graceful stop (the manifest's stop signal); returns the exit status."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(self.manifest.stop_signal)
            try:
                proc.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, self.manifest.kill_signal)
                proc.wait()
                raise WorkerError(f"worker {self.name} ignored {self.manifest.stop_signal.name}") from None
        return proc.returncode

    def kill(self) -> None:
        """Kills the whole process group at once, as a crash or power loss would."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            os.killpg(proc.pid, self.manifest.kill_signal)
        proc.wait()

    def descriptor(self) -> dict[str, object]:
        try:
            data = json.loads((self.public_api_dir / "endpoint.json").read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.endpoint.removeprefix("https://").rsplit(":", 1)
        return host.strip("[]"), int(port)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
