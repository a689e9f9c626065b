"""S7 sidecar placement: start a private worker, bootstrap it over pipes, supervise it.

The worker is started with ``posix_spawn`` (no shell) in its own process group, with the
bootstrap pipes placed at descriptors 3 and 4. Nothing secret goes into argv or the
environment. The bootstrap exchange (``_sidecar_bootstrap.py``) validates the reply member
by member with the same rules as a daemon's discovery files; the bearer stays in memory.
An unexpected exit is restarted at most
``max_restarts`` times with backoff, lazily, by the next call that needs the worker; a
request in flight when the worker died is never replayed. ``close()`` ends the process
group.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Final

from ._errors import SidecarError
from ._models import DeploymentMode
from ._options import SidecarOptions
from ._reasons import LocalReason
from ._sidecar_bootstrap import BootstrapReply, encode_request, read_reply

log = logging.getLogger("colossus_agent_client.sidecar")

# How long a failed connect waits to learn whether the worker exited (see died_while_connecting).
EXIT_NOTICE_GRACE: Final = 1.0


def program_not_found(executable: str) -> SidecarError:
    """The refusal of a worker program that does not exist, with what to do about it."""
    return SidecarError(
        f"the sidecar worker program {executable!r} was not found: install the worker "
        "(the reference worker: pip install ./conformance in a checkout of colossus-sdks) "
        "or set SidecarOptions.executable to its absolute path",
        reason=LocalReason.SIDECAR_PROGRAM_NOT_FOUND,
        metadata={"program": executable},
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
        request = encode_request(options, state_dir)
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
            reply = read_reply(out_read, time.monotonic() + options.startup_timeout)
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
