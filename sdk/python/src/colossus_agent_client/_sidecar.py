"""S7 sidecar placement: start a private worker, bootstrap it over pipes, supervise it.

The worker is started with ``posix_spawn`` (no shell) in its own process group, with the
bootstrap pipes placed at descriptors 3 and 4. Nothing secret goes into argv or the
environment. The reply is validated member by member with the same rules as a daemon's
discovery files; the bearer stays in memory. An unexpected exit is restarted at most
``max_restarts`` times with backoff, lazily, by the next call that needs the worker; a
request in flight when the worker died is never replayed. ``close()`` ends the process
group.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import select
import shutil
import signal
import stat
import struct
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._errors import (
    CertificateError,
    CredentialError,
    DescriptorError,
    PinMismatchError,
    SidecarError,
)
from ._models import DeploymentMode
from ._options import SidecarOptions
from ._reasons import LocalReason
from ._transport._bearer import Bearer
from ._transport._certificate import LeafCertificate, parse_leaf_certificate
from ._transport._descriptor import (
    API_VERSION,
    MAX_CERTIFICATE_BYTES,
    Endpoint,
    is_opaque_id,
    is_pin,
    load_json_object,
    parse_endpoint,
)

log = logging.getLogger("colossus_agent_client.sidecar")

MAX_FRAME: Final = 65_536
BOOTSTRAP_VERSION: Final = 1
_REPLY_KEYS: Final = frozenset(
    {
        "version",
        "endpoint",
        "instance_id",
        "api_version",
        "certificate_sha256",
        "certificate_pem",
        "credential_id",
        "bearer",
    }
)
_ERROR_CODE_MAX: Final = 64
_ERROR_MESSAGE_MAX: Final = 512
# How long a failed connect waits to learn whether the worker exited (see died_while_connecting).
EXIT_NOTICE_GRACE: Final = 1.0


@dataclass(frozen=True, slots=True)
class BootstrapReply:
    """A validated bootstrap reply. ``repr`` never shows the bearer."""

    endpoint: Endpoint
    instance_id: str
    certificate: LeafCertificate
    credential_id: str
    bearer: Bearer


def encode_frame(obj: dict[str, object]) -> bytes:
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise SidecarError(
            "the bootstrap request is larger than 64 KiB", reason=LocalReason.BOOTSTRAP_TOO_LARGE
        )
    return struct.pack(">I", len(body)) + body


def program_not_found(executable: str) -> SidecarError:
    """The refusal of a worker program that does not exist, with what to do about it."""
    return SidecarError(
        f"the sidecar worker program {executable!r} was not found: install the worker "
        "(the reference worker: pip install ./conformance in a checkout of colossus-sdks) "
        "or set SidecarOptions.executable to its absolute path",
        reason=LocalReason.SIDECAR_PROGRAM_NOT_FOUND,
        metadata={"program": executable},
    )


def _safe_token(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else ""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])


def parse_reply(body: bytes) -> BootstrapReply:
    """Validates one reply frame's body (everything, before anything is used)."""
    try:
        obj = load_json_object(body, what="the bootstrap reply", error=SidecarError)
    except SidecarError as exc:
        raise SidecarError(exc.message, reason=LocalReason.BOOTSTRAP_MALFORMED) from None
    # ``type(...) is int``: 1.0 and True compare equal to 1 but are not the integer 1.
    version = obj.get("version")
    if type(version) is not int or version != BOOTSTRAP_VERSION:
        raise SidecarError(
            "the bootstrap reply has an unknown version",
            reason=LocalReason.BOOTSTRAP_MALFORMED,
            metadata={"field": "version"},
        )
    if "error" in obj:
        error = obj["error"]
        if set(obj) != {"version", "error"} or not isinstance(error, dict):
            raise SidecarError(
                "the bootstrap error reply is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
            )
        code = _safe_token(error.get("code"), _ERROR_CODE_MAX) or "unknown"
        message = _safe_token(error.get("message"), _ERROR_MESSAGE_MAX)
        raise SidecarError(
            f"the sidecar refused to start: {message}",
            reason=LocalReason.BOOTSTRAP_REFUSED,
            metadata={"code": code},
        )
    if set(obj) != _REPLY_KEYS:
        unknown, missing = sorted(set(obj) - _REPLY_KEYS), sorted(_REPLY_KEYS - set(obj))
        raise SidecarError(
            f"the bootstrap reply members are wrong (unknown: {unknown}, missing: {missing})",
            reason=LocalReason.BOOTSTRAP_MALFORMED,
        )
    try:
        endpoint = parse_endpoint(obj["endpoint"])
    except DescriptorError as exc:
        raise SidecarError(
            exc.message, reason=LocalReason.BOOTSTRAP_MALFORMED, metadata={"field": "endpoint"}
        ) from None
    if not is_opaque_id(obj["instance_id"]):
        raise SidecarError(
            "the bootstrap instance_id is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    if not is_opaque_id(obj["credential_id"]):
        raise SidecarError(
            "the bootstrap credential_id is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    if obj["api_version"] != API_VERSION:
        raise SidecarError(
            "the bootstrap api_version is not v1alpha1", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    pin = obj["certificate_sha256"]
    if not is_pin(pin):
        raise SidecarError(
            "the bootstrap certificate_sha256 is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    pem = obj["certificate_pem"]
    # The cap of the daemon's certificate.pem holds for the reply's copy too.
    if not isinstance(pem, str) or not pem.isascii() or len(pem) > MAX_CERTIFICATE_BYTES:
        raise SidecarError(
            "the bootstrap certificate_pem is malformed", reason=LocalReason.BOOTSTRAP_MALFORMED
        )
    try:
        certificate = parse_leaf_certificate(pem.encode("ascii"), endpoint_host=endpoint.host)
    except CertificateError as exc:
        raise SidecarError(
            exc.message,
            reason=LocalReason.BOOTSTRAP_MALFORMED,
            metadata={"field": "certificate_pem"},
        ) from None
    if certificate.sha256 != pin:
        raise PinMismatchError("the bootstrap certificate does not hash to its pin")
    try:
        bearer = Bearer(obj["bearer"])
    except CredentialError:
        raise SidecarError(
            "the bootstrap bearer is malformed",
            reason=LocalReason.BOOTSTRAP_MALFORMED,
            metadata={"field": "bearer"},
        ) from None
    return BootstrapReply(
        endpoint=endpoint,
        instance_id=str(obj["instance_id"]),
        certificate=certificate,
        credential_id=str(obj["credential_id"]),
        bearer=bearer,
    )


def _check_state_dir(path: Path) -> None:
    if not path.is_absolute():
        raise SidecarError(
            "state_dir must be an absolute path", reason=LocalReason.STATE_DIR_INVALID
        )
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise SidecarError(
            "state_dir must be a directory owned by this user with mode 0700",
            reason=LocalReason.STATE_DIR_INVALID,
        )


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        wait = deadline - time.monotonic()
        if wait <= 0:
            raise SidecarError(
                "the sidecar did not answer in time", reason=LocalReason.BOOTSTRAP_TIMEOUT
            )
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        chunk = os.read(fd, remaining)
        if not chunk:
            raise SidecarError(
                "the sidecar closed the bootstrap pipe early", reason=LocalReason.BOOTSTRAP_EOF
            )
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _high_fd(fd: int) -> int:
    """Moves a descriptor to 10 or above, so the child-side dup2 never targets itself."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class SidecarProcess:
    """One spawned worker: its pid, its bootstrap pipe and its validated reply."""

    def __init__(self, pid: int, keepalive_fd: int, reply: BootstrapReply) -> None:
        self.pid = pid
        self.reply = reply
        self._keepalive_fd: int | None = keepalive_fd
        self._exited = threading.Event()
        self._exit_status: int | None = None
        self._closing = False
        self._reaped = False
        self._lock = threading.Lock()
        self._waiter = threading.Thread(
            target=self._wait, name=f"colossus-sidecar-{pid}", daemon=True
        )
        self._waiter.start()

    @property
    def alive(self) -> bool:
        return not self._exited.is_set()

    @property
    def unexpected_exit(self) -> bool:
        return self._exited.is_set() and not self._closing

    def died_within(self, timeout: float) -> bool:
        """Whether the worker exited unexpectedly, waiting up to ``timeout`` to find out."""
        return self._exited.wait(timeout) and not self._closing

    def _wait(self) -> None:
        # Wait without reaping, so the process group id cannot be reused before close()
        # has signalled every straggler in it.
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        if not self._closing:
            log.warning("sidecar worker pid=%d exited unexpectedly", self.pid)
        self._exited.set()

    @classmethod
    def spawn(cls, options: SidecarOptions, state_dir: Path) -> SidecarProcess:
        executable = str(options.executable)
        if os.sep not in executable:
            found = shutil.which(executable)
            if found is None:
                raise program_not_found(executable)
            executable = found
        argv = [
            executable,
            *options.extra_args,
            "--sidecar",
            "--bootstrap-in-fd",
            "3",
            "--bootstrap-out-fd",
            "4",
        ]
        request = encode_frame(
            {
                "version": BOOTSTRAP_VERSION,
                "state_dir": str(state_dir),
                "application_id": options.application_id,
                "grant": {
                    "scopes": list(options.scopes),
                    "roles": list(options.roles),
                    "tools": list(options.tools),
                },
            }
        )
        in_read, in_write = (_high_fd(fd) for fd in os.pipe())
        out_read, out_write = (_high_fd(fd) for fd in os.pipe())
        # Every source descriptor sits at 10 or above, so no dup2 below can overwrite a
        # source that a later one still needs (a low devnull could otherwise become fd 4).
        devnull = _high_fd(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))
        actions: list[tuple[int, ...]] = [
            (os.POSIX_SPAWN_DUP2, devnull, 0),
            (os.POSIX_SPAWN_DUP2, devnull, 1),
        ]
        if not options.inherit_stderr:
            actions.append((os.POSIX_SPAWN_DUP2, devnull, 2))
        actions += [
            (os.POSIX_SPAWN_DUP2, in_read, 3),
            (os.POSIX_SPAWN_DUP2, out_write, 4),
        ]
        try:
            pid = os.posix_spawn(
                executable, argv, dict(os.environ), file_actions=actions, setpgroup=0
            )
        except OSError as exc:
            for fd in (in_read, in_write, out_read, out_write, devnull):
                os.close(fd)
            if isinstance(exc, FileNotFoundError):
                raise program_not_found(executable) from None
            raise SidecarError(
                f"cannot start the worker: {exc.strerror}", reason=LocalReason.SIDECAR_SPAWN_FAILED
            ) from None
        for fd in (in_read, out_write, devnull):
            os.close(fd)
        log.info("started sidecar worker pid=%d", pid)
        try:
            os.write(in_write, request)
            deadline = time.monotonic() + options.startup_timeout
            (length,) = struct.unpack(">I", _read_exact(out_read, 4, deadline))
            if length > MAX_FRAME:
                raise SidecarError(
                    "the bootstrap reply is larger than 64 KiB",
                    reason=LocalReason.BOOTSTRAP_MALFORMED,
                )
            reply = parse_reply(_read_exact(out_read, length, deadline))
        except BaseException as exc:
            os.close(out_read)
            _terminate_group(pid, in_write, options.shutdown_grace)
            if isinstance(exc, OSError):
                raise SidecarError(
                    f"the bootstrap exchange failed: {exc.strerror}",
                    reason=LocalReason.BOOTSTRAP_IO,
                ) from None
            raise
        os.close(out_read)
        return cls(pid, in_write, reply)

    def close(self, grace: float) -> None:
        """EOF on the bootstrap pipe, then SIGTERM and SIGKILL to the whole group."""
        with self._lock:
            if self._reaped:
                return
            self._closing = True
            fd, self._keepalive_fd = self._keepalive_fd, None
            _terminate_group(self.pid, fd, grace, exited=self._exited)
            self._reaped = True


def _terminate_group(
    pid: int, keepalive_fd: int | None, grace: float, exited: threading.Event | None = None
) -> None:
    if keepalive_fd is not None:
        os.close(keepalive_fd)

    def leader_gone(timeout: float) -> bool:
        if exited is not None:
            return exited.wait(timeout)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
            except ChildProcessError:
                return True
            if result is not None:
                return True
            time.sleep(0.02)
        return False

    if not leader_gone(grace):
        _killpg(pid, signal.SIGTERM)
        if not leader_gone(2.0):
            _killpg(pid, signal.SIGKILL)
            leader_gone(5.0)
    # Stragglers in the group (descendants that outlived the leader).
    _killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    log.info("sidecar worker pid=%d stopped", pid)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class SidecarSupervisor:
    """Owns the worker across restarts; shared by the sync and async sidecar backends."""

    def __init__(self, options: SidecarOptions) -> None:
        self.options = options
        self._owned_dir: Path | None = None
        if options.state_dir is None:
            self._owned_dir = Path(tempfile.mkdtemp(prefix="colossus-sidecar-"))
            self.state_dir = self._owned_dir
        else:
            self.state_dir = Path(options.state_dir)
        _check_state_dir(self.state_dir)
        self.restarts = 0
        self.process: SidecarProcess | None = None
        self._delays = options.restart_backoff.delays()
        # Set once the restart budget is spent: every later call fails the same way.
        self._gave_up: SidecarError | None = None
        # True from the moment a replacement begins until a new worker answered its bootstrap,
        # so a failed spawn is retried (within the budget) instead of leaving a closed worker.
        self._replacing = False

    def start(self) -> SidecarProcess:
        self.process = SidecarProcess.spawn(self.options, self.state_dir)
        return self.process

    def needs_restart(self) -> bool:
        """True after an unexpected exit, an unfinished replacement, or once the budget is spent."""
        if self._gave_up is not None or self._replacing:
            return True
        return self.process is not None and self.process.unexpected_exit

    def died_while_connecting(self) -> bool:
        """Whether the worker exited, after a connect to it failed.

        A dying worker can refuse the connection just before its exit is noticed, so this
        waits up to :data:`EXIT_NOTICE_GRACE` for it.
        """
        return self.process is not None and self.process.died_within(EXIT_NOTICE_GRACE)

    def restart(self) -> SidecarProcess:
        """Replaces a worker that exited unexpectedly (blocking; bounded).

        Raises:
            SidecarError: the restart budget is spent (then on every later call too), or the
                replacement failed to start.
        """
        if self._gave_up is not None:
            raise SidecarError(self._gave_up.message, reason=self._gave_up.reason)
        self._replacing = True
        if self.process is not None:
            self.process.close(0)
        if self.restarts >= self.options.max_restarts:
            self._gave_up = SidecarError(
                f"the sidecar exited unexpectedly and {self.restarts} restarts were used",
                reason=LocalReason.SIDECAR_RESTARTS_EXHAUSTED,
            )
            raise SidecarError(self._gave_up.message, reason=self._gave_up.reason)
        self.restarts += 1
        delay = next(self._delays, self.options.restart_backoff.max_backoff)
        log.warning("restarting sidecar worker (restart %d) in %.2f s", self.restarts, delay)
        time.sleep(delay)
        process = self.start()
        self._replacing = False
        return process

    def expected_mode(self) -> DeploymentMode:
        return DeploymentMode.SIDECAR

    def close(self) -> None:
        if self.process is not None:
            self.process.close(self.options.shutdown_grace)
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None
