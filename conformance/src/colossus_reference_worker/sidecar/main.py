"""``colossus-reference-worker --sidecar``: start-up over inherited pipes (W16).

Sequence: arm the parent-death signal, read and validate one bootstrap request
from the input descriptor, start the worker in ``SIDECAR`` mode on the given
state folder with no discovery files, issue and activate one credential for
the named application, write the reply (the only place the bearer ever goes),
close the output descriptor, then serve until the input descriptor reaches
end-of-file or a ``SIGTERM``/``SIGINT`` arrives, and stop gracefully.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .. import event_loop
from ..config import API_VERSION, Limits, WorkerConfig
from ..credentials import Grant
from .lifetime import set_parent_death_signal, watch_for_eof
from .protocol import (
    BOUNDARY_VERSION,
    PROTOCOL_VERSION,
    BootstrapError,
    BootstrapRequest,
    error_reply,
    parse_request,
    read_frame,
    write_frame,
)

if TYPE_CHECKING:
    from ..server import RunningWorker

log = logging.getLogger(__name__)

EXIT_BOOTSTRAP = 2
EXIT_LOCKED = 3
EXIT_FAILED = 1

# Flags that make no sense for a sidecar: it has no discovery folder and no
# enrolled applications besides the one its parent names.
_FORBIDDEN = ("public_api_dir", "state_dir", "enroll_application", "rotate_credential",
              "revoke_credential", "bearer_fd", "keyring_service")


def _usage(message: str) -> int:
    sys.stderr.write(f"colossus-reference-worker: error: {message} (see --help)\n")
    return EXIT_BOOTSTRAP


def _reply_error(out_fd: int, code: str, message: str, version: int = PROTOCOL_VERSION) -> None:
    with contextlib.suppress(OSError):
        write_frame(out_fd, error_reply(code, message, version))
    with contextlib.suppress(OSError):
        os.close(out_fd)


def run(args: argparse.Namespace) -> int:
    """Entry point for ``--sidecar``; returns the process exit status."""
    in_fd, out_fd = args.bootstrap_in_fd, args.bootstrap_out_fd
    if in_fd is None or out_fd is None:
        return _usage("--sidecar needs --bootstrap-in-fd and --bootstrap-out-fd")
    if in_fd == out_fd or min(in_fd, out_fd) < 3:
        return _usage("the bootstrap descriptors must be two distinct numbers above 2")
    for fd in (in_fd, out_fd):
        try:
            os.fstat(fd)
        except OSError:
            return _usage(f"descriptor {fd} is not open")
        os.set_inheritable(fd, False)
    used = [name for name in _FORBIDDEN if getattr(args, name, None)]
    if used or getattr(args, "list_credentials", False):
        _reply_error(out_fd, "bootstrap_invalid", "flags not allowed in sidecar mode")
        return _usage("--sidecar cannot be combined with discovery or enrolment flags")

    set_parent_death_signal(signal.SIGTERM)
    try:
        request = parse_request(read_frame(in_fd))
        limits = Limits()
        for item in args.limit or []:
            name, _, value = item.partition("=")
            limits.override(name, value)
        limits.check_consistent()
    except BootstrapError as exc:
        _reply_error(out_fd, exc.code, exc.message, exc.version)
        return EXIT_BOOTSTRAP
    except ValueError as exc:
        _reply_error(out_fd, "startup_failed", f"bad --limit: {exc}", request.version)
        return EXIT_BOOTSTRAP
    config = WorkerConfig(
        state_dir=Path(request.state_dir),
        public_api_dir=None,
        host=args.host,
        port=args.port,
        deployment_mode="SIDECAR",
        enable_image_input=args.enable_image_input,
        allow_crash_step=args.allow_crash_step,
        limits=limits,
    )
    # The loop serve picks by default: uvloop where installed, else asyncio.
    return event_loop.run(event_loop.DEFAULT, _serve(config, request, in_fd, out_fd, args))


async def _serve(config: WorkerConfig, request: BootstrapRequest, in_fd: int, out_fd: int,
                 args: argparse.Namespace) -> int:
    from ..faults import hooks_from_args
    from ..server import start_worker
    from ..state import StateError, StateLocked

    hooks, control = hooks_from_args(args)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        worker = await start_worker(config, hooks)
    except StateLocked:
        _reply_error(out_fd, "state_locked", "another worker is serving this state_dir", request.version)
        return EXIT_LOCKED
    except StateError as exc:
        # The parent only learns the code; the reason (a missing secret, a bad mode...)
        # goes to the log, which carries no secret.
        log.error("sidecar state_dir cannot be used: %s", exc)
        _reply_error(out_fd, "state_dir_invalid", "state_dir cannot be used", request.version)
        return EXIT_BOOTSTRAP
    except Exception:
        log.exception("sidecar start-up failed")
        _reply_error(out_fd, "startup_failed", "the worker could not start", request.version)
        return EXIT_FAILED

    try:
        credential_id = _issue_and_reply(worker, request, out_fd)
    except Exception as exc:
        log.error("sidecar bootstrap reply failed (%s)", type(exc).__name__)
        _reply_error(out_fd, "startup_failed", "the credential could not be delivered", request.version)
        await worker.stop()
        if control is not None:
            control.close()
        return EXIT_FAILED
    log.info("sidecar serving %s; credential %s", worker.endpoint, credential_id)

    def parent_gone() -> None:
        loop.call_soon_threadsafe(stop.set)

    watch_for_eof(in_fd, parent_gone)
    try:
        await stop.wait()
    finally:
        await worker.stop()
        if control is not None:
            control.close()
    return 0


def _issue_and_reply(worker: RunningWorker, request: BootstrapRequest, out_fd: int) -> str:
    """Issue the one credential, hand its bearer to the parent only, close the pipe.

    Earlier sidecar credentials of the same application in this state folder
    are revoked first: only the newest parent holds a usable bearer. If the
    reply cannot be written the new credential is revoked too.
    """
    book = worker._workspace.credentials  # the sidecar owns its state folder outright
    for cred in book.all():
        if cred.application_id == request.application_id and cred.state != "revoked":
            book.revoke(cred.credential_id)
    # The execution boundary narrows the tools a run can see (offline_isolated hides the
    # generic network tools); it is never derived from the grant.
    grant = Grant(request.grant.scopes, request.grant.roles, request.effective_tools())
    credential_id, bearer = worker.issue_credential(request.application_id, grant)
    reply = {
        "version": request.version,
        "endpoint": worker.endpoint,
        "instance_id": worker.instance_id,
        "api_version": API_VERSION,
        "certificate_sha256": worker.certificate_sha256,
        "certificate_pem": worker.certificate_pem.decode("ascii"),
        "credential_id": credential_id,
        "bearer": bearer,
    }
    if request.version == BOUNDARY_VERSION:
        # Reported back so the parent can check the boundary it asked for is the one served.
        reply["execution_boundary"] = request.execution_boundary
    try:
        write_frame(out_fd, reply)
    except BaseException:
        worker.revoke_credential(credential_id)
        raise
    finally:
        del bearer, reply
    os.close(out_fd)
    return credential_id
