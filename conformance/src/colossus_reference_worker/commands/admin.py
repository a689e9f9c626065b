"""``enroll`` and ``credentials list | rotate | revoke`` (W3).

Issuing and revoking take the state folder's lock, so they run while the worker is
stopped; listing reads the folder without writing and works either way.

The bearer is handed over exactly once, to an inherited descriptor or the OS
credential store, between the pending verifier being committed and the
credential being activated; a failed hand-over leaves the credential pending.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from ..config import SCOPES, WorkerConfig
from ..credentials import NAME_GRAMMAR, Credential, CredentialBook, Grant
from ..state import ensure_private_dir
from .common import EXIT_DELIVERY, EXIT_FAILURE, UsageError, emit, wants_json

Deliver = Callable[[str, str], None]
"""Hands ``(application_id, bearer)`` to its destination; raises on failure."""


def add_delivery_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where the one-time bearer goes (exactly one)")
    group.add_argument("--bearer-fd", type=int, metavar="N",
                       help="write the bearer to inherited descriptor N (a pipe)")
    group.add_argument("--keyring-service", metavar="NAME",
                       help="store the bearer in the OS credential store under NAME")
    group.add_argument("--keyring-account", metavar="ACCOUNT",
                       help="account for --keyring-service (default: the application ID)")


def add_grant_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scope", action="append", default=[], choices=SCOPES, metavar="SCOPE",
                        help="grant a scope (repeatable): " + ", ".join(SCOPES))
    parser.add_argument("--role", action="append", default=[], help="grant a logical role")
    parser.add_argument("--tool", action="append", default=[], help="grant a tool")


def check_fd(fd: int | None) -> None:
    if fd is None:
        return
    if fd < 0:
        raise UsageError(f"--bearer-fd {fd} is not an open descriptor")
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        raise UsageError(f"--bearer-fd {fd} is not an open descriptor") from None
    # An inherited pipe (or socket) hands the bearer to one reader; a descriptor on a
    # file or a terminal would leave it on disk or on screen.
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        raise UsageError(f"--bearer-fd {fd} must be a pipe or a socket, not a file or terminal")


def delivery_from_args(args: argparse.Namespace) -> Deliver:
    """The bearer destination the flags name; exactly one is required."""
    if (args.bearer_fd is None) == (args.keyring_service is None):
        raise UsageError("give exactly one bearer destination: --bearer-fd or --keyring-service")
    check_fd(args.bearer_fd)
    if args.bearer_fd is not None:
        fd = args.bearer_fd
        return lambda _app, bearer: to_fd(fd, bearer)
    service, account = args.keyring_service, args.keyring_account
    return lambda app, bearer: to_keyring(service, account or app, bearer)


def to_fd(fd: int, bearer: str) -> None:
    with os.fdopen(fd, "w", closefd=True) as out:
        out.write(bearer + "\n")


def to_keyring(service: str, account: str, bearer: str) -> None:
    import keyring  # imported lazily: only enrolment needs it

    keyring.set_password(service, account, bearer)


def check_public_dir(config: WorkerConfig) -> None:
    """Refuse now what serving would refuse later (the same check, the same message)."""
    if config.public_api_dir is not None:
        ensure_private_dir(config.public_api_dir)


def grant_from_args(args: argparse.Namespace) -> Grant:
    for flag, names in (("--role", args.role), ("--tool", args.tool)):
        for name in names:
            if not NAME_GRAMMAR.fullmatch(name):
                raise UsageError(f"{flag} expects a name of 1-64 characters of "
                                 f"[A-Za-z0-9._:-], got {name!r}")
    try:
        return Grant(tuple(dict.fromkeys(args.scope)), tuple(dict.fromkeys(args.role)),
                     tuple(dict.fromkeys(args.tool)))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def issue(book: CredentialBook, app: str, grant: Grant, deliver: Deliver) -> Credential | None:
    """Issue, hand over, activate; ``None`` (and a message) when the hand-over failed."""
    try:
        cred, bearer = book.issue(app, grant)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        deliver(app, bearer)
    except Exception as exc:
        del bearer
        sys.stderr.write(
            f"colossus-reference-worker: error: the bearer could not be delivered "
            f"({type(exc).__name__}); credential {cred.credential_id} stays pending\n"
        )
        return None
    del bearer
    book.activate(cred.credential_id)
    return cred


def _identity_fields(cred: Credential, instance_id: str, sha256: str) -> dict[str, str]:
    return {"application_id": cred.application_id, "credential_id": cred.credential_id,
            "instance_id": instance_id, "certificate_sha256": sha256}


def enroll(args: argparse.Namespace, config: WorkerConfig, application_id: str) -> int:
    from ..server import open_workspace

    grant = grant_from_args(args)
    deliver = delivery_from_args(args)
    check_public_dir(config)
    ws = open_workspace(config)
    try:
        cred = issue(ws.credentials, application_id, grant, deliver)
        if cred is None:
            return EXIT_DELIVERY
        emit(args, _identity_fields(cred, ws.identity.instance_id,
                                    ws.identity.certificate_sha256))
        return 0
    finally:
        ws.close()


def rotate(args: argparse.Namespace, config: WorkerConfig, credential_id: str) -> int:
    from ..server import open_workspace
    from .snapshot import check_folder

    check_folder(config.state_dir)  # an existing worker folder: nothing is created here

    deliver = delivery_from_args(args)
    check_public_dir(config)
    ws = open_workspace(config)
    try:
        book, identity = ws.credentials, ws.identity
        old = book.get(credential_id)
        if old is None or old.state == "revoked":
            raise UsageError(f"no active or pending credential {credential_id!r} "
                             "(see `credentials list`)")
        cred = issue(book, old.application_id, old.grant, deliver)
        if cred is None:
            return EXIT_DELIVERY
        fields = _identity_fields(cred, identity.instance_id, identity.certificate_sha256)
        try:
            book.revoke(old.credential_id)
        except Exception as exc:
            # The replacement is active; name both so an operator can reconcile.
            sys.stderr.write(
                f"colossus-reference-worker: error: {cred.credential_id} is active but "
                f"revoking {old.credential_id} failed ({type(exc).__name__}); revoke it again\n"
            )
            emit(args, {**fields, "unrevoked_credential_id": old.credential_id})
            return EXIT_FAILURE
        emit(args, {**fields, "revoked_credential_id": old.credential_id})
        return 0
    finally:
        ws.close()


def revoke(args: argparse.Namespace, config: WorkerConfig, credential_id: str) -> int:
    from ..server import open_workspace
    from .snapshot import check_folder

    check_folder(config.state_dir)  # an existing worker folder: nothing is created here

    check_public_dir(config)
    ws = open_workspace(config)
    try:
        try:
            cred = ws.credentials.revoke(credential_id)
        except KeyError:
            raise UsageError(f"no such credential {credential_id!r} "
                             "(see `credentials list`)") from None
        emit(args, {**_identity_fields(cred, ws.identity.instance_id,
                                       ws.identity.certificate_sha256), "state": cred.state})
        return 0
    finally:
        ws.close()


def list_credentials(args: argparse.Namespace, state_dir: Path) -> int:
    """Non-secret credential rows, read without writing (works while the worker serves)."""
    from .snapshot import open_read_only, read_secret

    with open_read_only(state_dir) as (journal, _serving):
        book = CredentialBook(journal, read_secret(state_dir, "verifier-key"))
        for cred in book.all():
            row = {"credential_id": cred.credential_id, "application_id": cred.application_id,
                   "state": cred.state}
            if wants_json(args):
                emit(args, row)
            else:
                print(f"{cred.credential_id} {cred.application_id} {cred.state}")
    return 0
