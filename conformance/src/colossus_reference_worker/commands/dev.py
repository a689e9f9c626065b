"""``dev``: one command from nothing to a worker an SDK can connect to.

Creates a private folder if needed, makes sure one application is enrolled
with every scope, serves with INFO logs, and prints what each SDK needs plus a
snippet for Python, TypeScript and Go. The bearer goes to the OS keyring by
default (reused on the next start while it still authenticates), to an
inherited descriptor with ``--bearer-fd``, and onto the terminal only with
``--print-bearer-insecurely``. The application keeps one live credential: a new
one revokes those before it, whose bearers nobody holds any more.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import SCOPES, WorkerConfig
from ..credentials import CredentialBook, Grant
from ..errors import ApiError
from ..runtime.tools import known_tools
from ..state import ensure_private_dir
from .admin import Deliver, check_fd, issue, to_fd, to_keyring
from .common import EXIT_DELIVERY, UsageError, worker_config
from .serve import run_serve
from .snippets import Connection, snippets

if TYPE_CHECKING:
    from ..server import RunningWorker

DEV_ROLE = "default"


def default_dir() -> Path:
    """``$XDG_STATE_HOME/colossus-reference-worker/dev`` (``~/.local/state/...``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "colossus-reference-worker" / "dev"


def _keyring_bearer(service: str, account: str) -> str | None:
    import keyring  # lazily: only the keyring delivery needs it

    try:
        return keyring.get_password(service, account)
    except Exception:  # no backend: enrolment below reports it properly
        return None


def _still_valid(book: CredentialBook, app: str, bearer: str | None) -> str | None:
    """The credential ID ``bearer`` authenticates as for ``app``, if it still does."""
    if bearer is None:
        return None
    try:
        principal = book.authenticate(f"Bearer {bearer}")
    except ApiError:
        return None
    return principal.credential_id if principal.application_id == app else None


class _Enrolment:
    """Where the dev application's bearer is and which credential it belongs to."""

    def __init__(self, credential_id: str, where: str, bearer: str | None) -> None:
        self.credential_id = credential_id
        self.where = where
        self.bearer = bearer  # only with --print-bearer-insecurely


def _enrol(args: argparse.Namespace, config: WorkerConfig) -> _Enrolment | None:
    from ..server import open_workspace

    app, service = args.application, args.keyring_service
    ws = open_workspace(config)
    try:
        book = ws.credentials
        printed: list[str] = []
        deliver: Deliver
        if args.bearer_fd is not None:
            fd = args.bearer_fd
            deliver, where = (lambda _a, b: to_fd(fd, b)), f"written to descriptor {fd}"
        elif args.print_bearer_insecurely:
            deliver, where = (lambda _a, b: printed.append(b)), "printed below (insecure)"
        else:
            where = f'OS keyring, service "{service}", account "{app}"'
            reused = _still_valid(book, app, _keyring_bearer(service, app))
            if reused is not None:
                return _Enrolment(reused, where, None)
            deliver = lambda a, b: to_keyring(service, a, b)  # noqa: E731
        grant = Grant(SCOPES, (DEV_ROLE,), tuple(known_tools()))
        cred = issue(book, app, grant, deliver)
        if cred is None:
            if not (args.bearer_fd is not None or args.print_bearer_insecurely):
                sys.stderr.write("colossus-reference-worker: hint: without an OS keyring, "
                                 "use --bearer-fd N (a pipe) or --print-bearer-insecurely\n")
            return None
        for old in book.all():
            if old.application_id == app and old.state != "revoked" and old is not cred:
                book.revoke(old.credential_id)
        return _Enrolment(cred.credential_id, where, printed[0] if printed else None)
    finally:
        ws.close()


def _banner(args: argparse.Namespace, config: WorkerConfig, enrolment: _Enrolment,
            worker: RunningWorker) -> None:
    assert config.public_api_dir is not None
    conn = Connection(
        public_api_dir=str(config.public_api_dir), instance_id=worker.instance_id,
        certificate_sha256=worker.certificate_sha256, application_id=args.application,
        keyring_service=None if enrolment.where.startswith(("written", "printed"))
        else args.keyring_service,
    )
    if args.json:
        print(json.dumps({
            "endpoint": worker.endpoint, "public_api_dir": conn.public_api_dir,
            "state_dir": str(config.state_dir), "instance_id": conn.instance_id,
            "certificate_sha256": conn.certificate_sha256,
            "application_id": conn.application_id, "credential_id": enrolment.credential_id,
            "bearer": enrolment.where, **({"bearer_value": enrolment.bearer}
                                         if enrolment.bearer else {}),
        }), flush=True)
        return
    lines = [
        "Colossus reference worker, development mode",
        f"  endpoint             {worker.endpoint}",
        f"  public API folder    {conn.public_api_dir}",
        f"  state folder         {config.state_dir}",
        f"  instance ID          {conn.instance_id}",
        f"  certificate SHA-256  {conn.certificate_sha256}",
        f"  application          {conn.application_id} (credential {enrolment.credential_id}, "
        "every scope)",
        f"  bearer               {enrolment.where}",
    ]
    if enrolment.bearer is not None:
        lines.append(f"  bearer value         {enrolment.bearer}")
    print("\n".join(lines), flush=True)
    print(snippets(conn), flush=True)
    print(f"Inspect runs: colossus-reference-worker runs list --public-api-dir "
          f"{conn.public_api_dir}\nStop with Ctrl-C.\n", flush=True)


def run_dev(args: argparse.Namespace) -> int:
    check_fd(args.bearer_fd)
    if args.bearer_fd is not None and args.print_bearer_insecurely:
        raise UsageError("--bearer-fd and --print-bearer-insecurely exclude each other")
    if args.public_api_dir is None:
        args.public_api_dir = default_dir()
    ensure_private_dir(Path(args.public_api_dir).absolute())
    config = worker_config(args)
    enrolment = _enrol(args, config)
    if enrolment is None:
        return EXIT_DELIVERY
    if enrolment.bearer is not None:
        sys.stderr.write("colossus-reference-worker: warning: the bearer is printed on standard "
                         "output (--print-bearer-insecurely); anyone who sees it can act as "
                         f"{args.application}\n")
    return run_serve(config, args, lambda worker: _banner(args, config, enrolment, worker))
