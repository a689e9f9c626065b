"""``dev``: one command from nothing to a worker an SDK can connect to.

Creates a private folder if needed, makes sure one application is enrolled
with every scope, serves with INFO logs, and prints what each SDK needs plus a
snippet for Python, TypeScript and Go. The bearer goes, by default, to an
owner-only file in that folder (no OS keyring needed); with ``--keyring`` to the
OS keyring; either is reused on the next start while it still authenticates, so
a client that holds it carries on across a restart. ``--bearer-fd`` and
``--print-bearer-insecurely`` hand a fresh bearer out on every start. ``dev``
never revokes: a bearer some client still holds keeps working until
``credentials revoke``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import SCOPES, WorkerConfig
from ..credentials import CredentialBook, Grant
from ..errors import ApiError
from ..runtime.tools import known_tools
from ..state import ensure_private_dir
from .admin import Deliver, check_fd, issue, to_fd, to_keyring
from .common import EXIT_DELIVERY, UsageError, worker_config
from .dev_bearer_file import bearer_file, read_bearer_file, write_bearer_file
from .serve import run_serve
from .snippets import Connection, snippets

if TYPE_CHECKING:
    from ..server import RunningWorker

DEV_ROLE = "default"
DEFAULT_KEYRING_SERVICE = "colossus"


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


@dataclass(frozen=True)
class BearerPlace:
    """Where the dev application's bearer is: one of four deliveries, as plain facts."""

    delivery: str
    """``file`` (the default), ``keyring``, ``fd`` or ``stdout``."""
    path: str | None = None
    keyring_service: str | None = None
    keyring_account: str | None = None
    fd: int | None = None
    value: str | None = field(default=None, repr=False)
    """The bearer itself, only for ``stdout`` (``--print-bearer-insecurely``)."""

    def as_json(self) -> dict[str, object]:
        facts = {"delivery": self.delivery, "path": self.path, "fd": self.fd,
                 "keyring_service": self.keyring_service,
                 "keyring_account": self.keyring_account, "value": self.value}
        return {k: v for k, v in facts.items() if v is not None}

    def describe(self) -> str:
        if self.delivery == "file":
            return f"in the file {self.path} (mode 0600; kept across restarts)"
        if self.delivery == "keyring":
            return (f'OS keyring, service "{self.keyring_service}", account '
                    f'"{self.keyring_account}" (kept across restarts)')
        if self.delivery == "fd":
            return f"written to descriptor {self.fd} (a fresh one on every start)"
        return "printed below (insecure; a fresh one on every start)"


@dataclass(frozen=True)
class _Enrolment:
    """Which credential the dev application uses and where its bearer is."""

    credential_id: str
    place: BearerPlace
    reused: bool


def _delivery_flags(args: argparse.Namespace) -> list[str]:
    keyring = args.keyring or args.keyring_service is not None
    chosen = [("--bearer-fd", args.bearer_fd is not None),
              ("--print-bearer-insecurely", args.print_bearer_insecurely),
              ("--keyring", keyring)]
    return [name for name, on in chosen if on]


def _place(args: argparse.Namespace, config: WorkerConfig) -> BearerPlace:
    app = args.application
    if args.bearer_fd is not None:
        return BearerPlace("fd", fd=args.bearer_fd)
    if args.print_bearer_insecurely:
        return BearerPlace("stdout")
    if args.keyring or args.keyring_service is not None:
        return BearerPlace("keyring", keyring_service=args.keyring_service
                           or DEFAULT_KEYRING_SERVICE, keyring_account=app)
    assert config.public_api_dir is not None
    return BearerPlace("file", path=str(bearer_file(config.public_api_dir, app)))


def _stored_bearer(place: BearerPlace) -> str | None:
    """The bearer a previous start left where this start looks, if any."""
    if place.delivery == "file":
        assert place.path is not None
        return read_bearer_file(Path(place.path))
    if place.delivery == "keyring":
        assert place.keyring_service is not None and place.keyring_account is not None
        return _keyring_bearer(place.keyring_service, place.keyring_account)
    return None  # a pipe or the terminal: nothing to come back to


def _deliver(place: BearerPlace, printed: list[str]) -> Deliver:
    if place.delivery == "file":
        path = Path(str(place.path))
        return lambda _app, bearer: write_bearer_file(path, bearer)
    if place.delivery == "keyring":
        service, account = str(place.keyring_service), str(place.keyring_account)
        return lambda _app, bearer: to_keyring(service, account, bearer)
    if place.delivery == "fd":
        fd = int(str(place.fd))
        return lambda _app, bearer: to_fd(fd, bearer)
    return lambda _app, bearer: printed.append(bearer)


def _enrol(args: argparse.Namespace, config: WorkerConfig) -> _Enrolment | None:
    from ..server import open_workspace

    app = args.application
    place = _place(args, config)
    stored = _stored_bearer(place)  # read before the workspace lock: nothing else is held
    ws = open_workspace(config)
    try:
        book = ws.credentials
        reused = _still_valid(book, app, stored)
        if reused is not None:
            return _Enrolment(reused, place, reused=True)
        printed: list[str] = []
        grant = Grant(SCOPES, (DEV_ROLE,), tuple(known_tools()))
        cred = issue(book, app, grant, _deliver(place, printed))
        if cred is None:
            if place.delivery == "keyring":
                sys.stderr.write("colossus-reference-worker: hint: without an OS keyring, "
                                 "leave out --keyring: the bearer then goes to an "
                                 "owner-only file in the dev folder\n")
            return None
        if printed:
            place = BearerPlace("stdout", value=printed[0])
        return _Enrolment(cred.credential_id, place, reused=False)
    finally:
        ws.close()


def _banner(args: argparse.Namespace, config: WorkerConfig, enrolment: _Enrolment,
            worker: RunningWorker) -> None:
    assert config.public_api_dir is not None
    place = enrolment.place
    conn = Connection(
        public_api_dir=str(config.public_api_dir), instance_id=worker.instance_id,
        certificate_sha256=worker.certificate_sha256, application_id=args.application,
        keyring_service=place.keyring_service, bearer_file=place.path,
    )
    if args.json:
        print(json.dumps({
            "endpoint": worker.endpoint, "public_api_dir": conn.public_api_dir,
            "state_dir": str(config.state_dir), "instance_id": conn.instance_id,
            "certificate_sha256": conn.certificate_sha256,
            "application_id": conn.application_id, "credential_id": enrolment.credential_id,
            "credential_reused": enrolment.reused, "bearer": place.as_json(),
        }), flush=True)
        return
    state = "reused" if enrolment.reused else "new"
    lines = [
        "Colossus reference worker, development mode",
        f"  endpoint             {worker.endpoint}",
        f"  public API folder    {conn.public_api_dir}",
        f"  state folder         {config.state_dir}",
        f"  instance ID          {conn.instance_id}",
        f"  certificate SHA-256  {conn.certificate_sha256}",
        f"  application          {conn.application_id} (credential {enrolment.credential_id}, "
        f"{state}, every scope)",
        f"  bearer               {place.describe()}",
    ]
    if place.value is not None:
        lines.append(f"  bearer value         {place.value}")
    print("\n".join(lines), flush=True)
    print(snippets(conn), flush=True)
    print(f"Inspect runs: colossus-reference-worker runs list --public-api-dir "
          f"{conn.public_api_dir}\nStop with Ctrl-C.\n", flush=True)


def run_dev(args: argparse.Namespace) -> int:
    check_fd(args.bearer_fd)
    chosen = _delivery_flags(args)
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} exclude each other")
    if args.public_api_dir is None:
        args.public_api_dir = default_dir()
    ensure_private_dir(Path(args.public_api_dir).absolute())
    config = worker_config(args)
    enrolment = _enrol(args, config)
    if enrolment is None:
        return EXIT_DELIVERY
    if enrolment.place.value is not None:
        sys.stderr.write("colossus-reference-worker: warning: the bearer is printed on standard "
                         "output (--print-bearer-insecurely); anyone who sees it can act as "
                         f"{args.application}\n")
    return run_serve(config, args, lambda worker: _banner(args, config, enrolment, worker))
