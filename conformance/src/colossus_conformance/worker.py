"""Runs the reference worker for the suite: enrolment, start, stop.

One ``ManagedWorker`` per worker configuration (genuine listener, or one of
the deliberately wrong listener variants). Applications are enrolled while
the worker is stopped, as W3 requires; each bearer comes back through an
anonymous pipe (``--bearer-fd``) and is kept in the runner's memory only.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fault_control import FaultControl

ALL_SCOPES = (
    "runs:execute",
    "runs:read",
    "runs:control",
    "prompts:respond",
    "approvals:respond",
    "artifacts:read",
    "artifacts:write",
)
DEFAULT_TOOLS = ["filesystem.read", "filesystem.write", "shell.run", "web.fetch"]
DEFAULT_GRANT: dict[str, Any] = {"scopes": list(ALL_SCOPES), "roles": ["default"], "tools": DEFAULT_TOOLS}

# Limits of the suite's workers. The create buckets and active-run caps are
# raised so dozens of cases can run back to back; the ListRuns scan budget is
# lowered so sparse filters produce short and empty pages with a handful of
# runs. Every value stays advertised through GetServerInfo, so SDKs see the
# truth.
SUITE_LIMITS: dict[str, str] = {
    "create_rate_per_second": "1000",
    "create_rate_burst": "1000",
    "create_rate_per_application_per_second": "1000",
    "create_rate_per_application_burst": "1000",
    "max_active_runs": "512",
    "max_active_runs_per_application": "256",
    "list_scan_budget": "4",
    "list_batch_size": "2",
}

# Listener variant per configuration name; ``daemon`` is the genuine listener with the
# suite's limits, ``default-limits`` the genuine listener with the worker's own limits.
CONFIGURATIONS: dict[str, str | None] = {
    "daemon": None,
    "default-limits": None,
    "tls12": "tls12",
    "foreign-leaf": "foreign-leaf",
    "leaf-with-intermediate": "leaf-with-intermediate",
    "no-h2-alpn": "no-h2-alpn",
}

START_TIMEOUT_SECONDS = 60.0


def worker_command() -> list[str]:
    """How to run the reference worker from the runner's environment."""
    return [
        sys.executable,
        "-c",
        "import sys; from colossus_reference_worker.cli import main; sys.exit(main())",
    ]


def sidecar_fault_command(fault: str, record: Path, children: Path) -> list[str]:
    """A sidecar worker command that misbehaves on purpose (faults/sidecar_wrapper.py)."""
    return [
        sys.executable,
        "-c",
        "import sys; from colossus_reference_worker.faults.sidecar_wrapper import main; sys.exit(main())",
        "--sidecar-fault",
        fault,
        "--record",
        str(record),
        "--children",
        str(children),
    ]


@dataclass(frozen=True)
class Enrolment:
    """Non-secret enrolment output plus the bearer (held in memory only)."""

    application_id: str
    credential_id: str
    instance_id: str
    certificate_sha256: str
    bearer: str = field(repr=False)


class WorkerError(Exception):
    """The worker could not be enrolled, started or stopped."""


class ManagedWorker:
    """One reference worker process and its private folders."""

    def __init__(self, name: str, scratch: Path, log_dir: Path, limits: dict[str, str] | None = None):
        self.name = name
        self.variant = CONFIGURATIONS[name]
        self.root = Path(tempfile.mkdtemp(prefix=f"worker-{name}-", dir=scratch))
        os.chmod(self.root, 0o700)
        self.state_dir = self.root / "state"
        self.public_api_dir = self.root / "public-api"
        for d in (self.state_dir, self.public_api_dir):
            d.mkdir(mode=0o700)
        # Unix socket paths are limited to about 100 bytes, so the control socket
        # lives in a short private folder of its own rather than under ``scratch``.
        self.socket_dir = Path(tempfile.mkdtemp(prefix="ccf-"))
        os.chmod(self.socket_dir, 0o700)
        self.fault_socket = self.socket_dir / "fault.sock"
        self.log_path = log_dir / f"worker-{name}.log"
        self.limits = dict(SUITE_LIMITS if limits is None else limits)
        self.enrolments: dict[str, Enrolment] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.control: FaultControl | None = None
        self.instance_id = ""
        self.certificate_sha256 = ""

    # -- enrolment -------------------------------------------------------------

    def base_args(self) -> list[str]:
        return ["--state-dir", str(self.state_dir), "--public-api-dir", str(self.public_api_dir)]

    def enrol(self, application_id: str, grant: dict[str, Any]) -> Enrolment:
        """Enrols one application (worker stopped); the bearer arrives on a pipe."""
        if self.proc is not None:
            raise WorkerError("enrolment needs the worker stopped")
        read_fd, write_fd = os.pipe()
        argv = [*worker_command(), *self.base_args(), "--enroll-application", application_id]
        for scope in grant.get("scopes", []):
            argv += ["--scope", scope]
        for role in grant.get("roles", []):
            argv += ["--role", role]
        for tool in grant.get("tools", []):
            argv += ["--tool", tool]
        argv += ["--bearer-fd", str(write_fd), "--output", "json"]
        try:
            with open(self.log_path, "ab") as log:
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, pass_fds=(write_fd,))
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            bearer_bytes = pipe.read(4096)
        out, _ = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise WorkerError(
                f"enrolment of {application_id} failed (exit {proc.returncode}); see {self.log_path}"
            )
        info = json.loads(out.decode().strip().splitlines()[-1])
        bearer = bearer_bytes.decode("ascii").strip()
        enrolment = Enrolment(
            application_id=info["application_id"],
            credential_id=info["credential_id"],
            instance_id=info["instance_id"],
            certificate_sha256=info["certificate_sha256"],
            bearer=bearer,
        )
        self.enrolments[application_id] = enrolment
        self.instance_id = enrolment.instance_id
        self.certificate_sha256 = enrolment.certificate_sha256
        return enrolment

    # -- process ---------------------------------------------------------------

    def start(self, silent_closes: int = 0) -> None:
        """Starts the worker; ``silent_closes`` first connections are dropped before any TLS byte."""
        argv = [*worker_command(), *self.base_args(), "--fault-control-socket", str(self.fault_socket)]
        if self.variant:
            argv += ["--fault-listener", self.variant]
        if silent_closes:
            argv += ["--fault-silent-close", str(silent_closes)]
        for name, value in sorted(self.limits.items()):
            argv += ["--limit", f"{name}={value}"]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it
        log.write(f"== start {' '.join(argv)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise WorkerError(
                    f"worker {self.name} exited with {self.proc.returncode}; see {self.log_path}"
                )
            if self._descriptor_pid() == self.proc.pid and self.fault_socket.exists():
                try:
                    self.control = FaultControl(str(self.fault_socket))
                    break
                except OSError:
                    pass
            time.sleep(0.1)
        else:
            self.stop()
            raise WorkerError(f"worker {self.name} did not become ready; see {self.log_path}")
        descriptor = json.loads((self.public_api_dir / "endpoint.json").read_text())
        self.endpoint = descriptor["endpoint"]
        if not self.instance_id:
            self.instance_id = descriptor["instance_id"]
            self.certificate_sha256 = descriptor["certificate_sha256"]

    def restart(self, hard: bool, listener: str | None = None) -> None:
        """Stops the worker (SIGKILL when ``hard``, else a graceful stop) and starts it again.

        ``listener`` names a listener variant for the new lifetime (``genuine`` for none);
        the worker keeps its port, identity and discovery files, so only the live handshake
        differs. ``restore_listener`` goes back to the configuration's own variant.
        """
        self.halt(hard, listener)
        self.start()

    def halt(self, hard: bool, listener: str | None = None) -> None:
        """Stops the worker as ``restart`` does, leaving it down until ``start`` is called."""
        if listener is not None:
            self.variant = None if listener == "genuine" else listener
        if hard and self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.control is not None:
            with contextlib.suppress(OSError):
                self.control.close()
            self.control = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=15)
        self.proc = None
        # A killed worker leaves its socket behind, and the worker refuses to
        # start on an existing path.
        with contextlib.suppress(FileNotFoundError):
            self.fault_socket.unlink()

    @property
    def listener_changed(self) -> bool:
        return self.variant != CONFIGURATIONS.get(self.name)

    def restore_listener(self) -> None:
        """Restarts into the configuration's own listener after a case changed it."""
        self.restart(hard=False, listener=CONFIGURATIONS.get(self.name) or "genuine")

    def stop(self) -> None:
        if self.control is not None:
            with contextlib.suppress(OSError):
                self.control.close()
            self.control = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            self.proc = None
        shutil.rmtree(self.socket_dir, ignore_errors=True)

    def discovery_facts(self) -> dict[str, Any]:
        """What the runner itself sees of the real discovery folder (W2)."""
        facts: dict[str, Any] = {}
        try:
            facts["dir_mode"] = oct(os.stat(self.public_api_dir).st_mode & 0o777)
            for name, key in (("endpoint.json", "endpoint"), ("certificate.pem", "certificate")):
                st = os.lstat(self.public_api_dir / name)
                facts[f"{key}_mode"] = oct(st.st_mode & 0o777)
                facts[f"{key}_is_regular_file"] = stat.S_ISREG(st.st_mode)
                facts[f"{key}_bytes"] = st.st_size
            descriptor = json.loads((self.public_api_dir / "endpoint.json").read_text())
            facts["descriptor_members"] = sorted(descriptor)
            facts["descriptor_pid_is_worker"] = (
                self.proc is not None and descriptor.get("pid") == self.proc.pid
            )
            facts["descriptor_pin_matches_enrolment"] = (
                descriptor.get("certificate_sha256") == self.certificate_sha256
            )
            facts["descriptor_instance_matches_enrolment"] = descriptor.get("instance_id") == self.instance_id
        except (OSError, ValueError) as exc:
            facts["error"] = str(exc)
        return facts

    def _descriptor_pid(self) -> int | None:
        """The pid in endpoint.json (a killed predecessor may have left its own)."""
        try:
            pid = json.loads((self.public_api_dir / "endpoint.json").read_text()).get("pid")
        except (OSError, ValueError):
            return None
        return pid if isinstance(pid, int) else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def unknown_bearer() -> str:
    """A well-formed bearer this worker never issued."""
    return "cb1_" + secrets.token_urlsafe(32)[:43].ljust(43, "A")


def malformed_bearer(kind: str) -> str:
    """Bearers that break the grammar in one way each (C5)."""
    good = unknown_bearer()
    return {
        "malformed-space": good[:20] + " " + good[21:],
        "malformed-control": good[:20] + "\x07" + good[21:],
        "malformed-non-ascii": good[:20] + "\u00e9" + good[21:],
        "malformed-short": good[:31],
        "malformed-long": (good * 6)[:257],
        "empty": "",
    }[kind]
