"""``colossus-reference-worker``: serve, enrol, rotate and revoke.

Exit codes: 0 success; 2 bad command line; 3 the state folder is in use by a
running worker; 4 the state or public API folder is unusable; 5 the bearer
could not be delivered (the credential stays pending); 6 the journal failed
its integrity check; 1 anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from . import logsetup
from .config import SCOPES, Limits, WorkerConfig
from .credentials import Credential, Grant
from .errors import JournalIntegrityError, StorageUnavailable
from .faults import add_arguments as add_fault_arguments
from .faults import hooks_from_args
from .sidecar.main import add_arguments as add_sidecar_arguments
from .state import StateError, StateLocked

EXIT_USAGE, EXIT_LOCKED, EXIT_STATE, EXIT_DELIVERY, EXIT_INTEGRITY = 2, 3, 4, 5, 6


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, no usage dump
        sys.stderr.write(f"colossus-reference-worker: error: {message} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="colossus-reference-worker",
        description="Reference worker for the Colossus public API (colossus.api.v1alpha1).",
        epilog=(
            "Exit codes: 0 ok, 2 bad command line, 3 state folder in use by a running worker, "
            "4 unusable folder, 5 bearer not delivered (credential left pending), "
            "6 journal integrity failure, 1 other errors. "
            "See conformance/docs/reference-worker.md."
        ),
    )
    p.add_argument("--public-api-dir", type=Path, metavar="DIR",
                   help="0700 folder for endpoint.json and certificate.pem")
    p.add_argument("--state-dir", type=Path, metavar="DIR",
                   help="private state folder (default: DIR/state under --public-api-dir)")
    p.add_argument("--host", default="127.0.0.1", choices=["127.0.0.1", "::1"],
                   help="loopback address to listen on")
    p.add_argument("--port", type=int, default=0, help="TCP port (default: previous or any)")
    p.add_argument("--enable-image-input", action="store_true",
                   help="advertise and accept attachments.image_input")
    p.add_argument("--allow-crash-step", action="store_true",
                   help="honour the script step 'crash' (tests only)")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="override one limit, e.g. max_active_runs_per_application=2")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="log the worker's own messages to stderr from this level "
                        "(default WARNING; libraries log from WARNING only); "
                        "bearers are never logged")

    admin = p.add_argument_group("credential administration (worker stopped)")
    admin.add_argument("--enroll-application", metavar="APP", help="issue a credential to APP")
    admin.add_argument("--scope", action="append", default=[], choices=SCOPES, metavar="SCOPE",
                       help="grant a scope (repeatable): " + ", ".join(SCOPES))
    admin.add_argument("--role", action="append", default=[], help="grant a logical role")
    admin.add_argument("--tool", action="append", default=[], help="grant a tool")
    admin.add_argument("--rotate-credential", metavar="ID",
                       help="issue a replacement with the same grant, then revoke ID")
    admin.add_argument("--revoke-credential", metavar="ID", help="revoke ID permanently")
    admin.add_argument("--list-credentials", action="store_true",
                       help="print non-secret credential IDs, applications and states")
    admin.add_argument("--bearer-fd", type=int, metavar="N",
                       help="write the one-time bearer to inherited descriptor N")
    admin.add_argument("--keyring-service", metavar="NAME",
                       help="store the bearer in the OS credential store under NAME")
    admin.add_argument("--keyring-account", metavar="ACCOUNT",
                       help="account for --keyring-service (default: the application ID)")
    admin.add_argument("--output", choices=["text", "json"], default="text",
                       help="print key: value lines (default) or one JSON object")
    add_sidecar_arguments(p)
    add_fault_arguments(p)
    return p


def _config(args: argparse.Namespace) -> WorkerConfig:
    if args.public_api_dir is None and args.state_dir is None:
        raise _UsageError("--public-api-dir is required")
    limits = Limits()
    for item in args.limit:
        name, sep, value = item.partition("=")
        if not sep:
            raise _UsageError(f"--limit expects NAME=VALUE, got {item!r}")
        try:
            limits.override(name, value)
        except ValueError as exc:
            raise _UsageError(str(exc)) from None
    public = args.public_api_dir.absolute() if args.public_api_dir else None
    state = args.state_dir.absolute() if args.state_dir else public / "state"  # type: ignore[operator]
    return WorkerConfig(
        state_dir=state, public_api_dir=public, host=args.host, port=args.port,
        enable_image_input=args.enable_image_input, allow_crash_step=args.allow_crash_step,
        limits=limits,
    )


class _UsageError(Exception):
    pass


def _deliver(args: argparse.Namespace, application_id: str, bearer: str) -> None:
    if args.bearer_fd is not None:
        with os.fdopen(args.bearer_fd, "w", closefd=True) as out:
            out.write(bearer + "\n")
        return
    import keyring  # imported lazily: only enrolment needs it

    keyring.set_password(args.keyring_service, args.keyring_account or application_id, bearer)


def _print_credential(args: argparse.Namespace, cred: Credential, instance_id: str,
                      sha256: str, extra: dict[str, str] | None = None) -> None:
    data = {"application_id": cred.application_id, "credential_id": cred.credential_id,
            "instance_id": instance_id, "certificate_sha256": sha256, **(extra or {})}
    if args.output == "json":
        print(json.dumps(data))
    else:
        for key, value in data.items():
            print(f"{key}: {value}")


def _administer(args: argparse.Namespace, config: WorkerConfig) -> int:
    from .server import open_workspace

    actions = [a for a in (args.enroll_application, args.rotate_credential,
                           args.revoke_credential) if a] + ([1] if args.list_credentials else [])
    if len(actions) != 1:
        raise _UsageError("choose one of --enroll-application, --rotate-credential, "
                          "--revoke-credential, --list-credentials")
    issuing = bool(args.enroll_application or args.rotate_credential)
    if issuing and (args.bearer_fd is None) == (args.keyring_service is None):
        raise _UsageError("give exactly one bearer destination: --bearer-fd or --keyring-service")
    if args.bearer_fd is not None:
        try:
            os.fstat(args.bearer_fd)
        except OSError:
            raise _UsageError(f"--bearer-fd {args.bearer_fd} is not an open descriptor") from None
    ws = open_workspace(config)
    try:
        book, identity = ws.credentials, ws.identity
        if args.list_credentials:
            for cred in book.all():
                row = {"credential_id": cred.credential_id,
                       "application_id": cred.application_id, "state": cred.state}
                print(json.dumps(row) if args.output == "json" else
                      f"{cred.credential_id} {cred.application_id} {cred.state}")
            return 0
        if args.revoke_credential:
            try:
                cred = book.revoke(args.revoke_credential)
            except KeyError:
                raise _UsageError("no such credential") from None
            _print_credential(args, cred, identity.instance_id, identity.certificate_sha256,
                              {"state": cred.state})
            return 0
        old: Credential | None = None
        if args.rotate_credential:
            old = book.get(args.rotate_credential)
            if old is None or old.state == "revoked":
                raise _UsageError("no such active or pending credential")
            app, grant = old.application_id, old.grant
        else:
            app = args.enroll_application
            try:
                grant = Grant(tuple(dict.fromkeys(args.scope)), tuple(dict.fromkeys(args.role)),
                              tuple(dict.fromkeys(args.tool)))
            except ValueError as exc:
                raise _UsageError(str(exc)) from None
        try:
            cred, bearer = book.issue(app, grant)
        except ValueError as exc:
            raise _UsageError(str(exc)) from None
        try:
            _deliver(args, app, bearer)
        except Exception as exc:
            del bearer
            sys.stderr.write(
                f"colossus-reference-worker: error: the bearer could not be delivered "
                f"({type(exc).__name__}); credential {cred.credential_id} stays pending\n"
            )
            return EXIT_DELIVERY
        del bearer
        book.activate(cred.credential_id)
        extra = {}
        if old is not None:
            try:
                book.revoke(old.credential_id)
            except Exception as exc:
                # The replacement is active; name both so an operator can reconcile.
                sys.stderr.write(
                    f"colossus-reference-worker: error: {cred.credential_id} is active but "
                    f"revoking {old.credential_id} failed ({type(exc).__name__}); "
                    "revoke it again\n"
                )
                _print_credential(args, cred, identity.instance_id, identity.certificate_sha256,
                                  {"unrevoked_credential_id": old.credential_id})
                return 1
            extra = {"revoked_credential_id": old.credential_id}
        _print_credential(args, cred, identity.instance_id, identity.certificate_sha256, extra)
        return 0
    finally:
        ws.close()


async def _serve(config: WorkerConfig, args: argparse.Namespace) -> int:
    from .server import start_worker

    try:
        hooks, control = hooks_from_args(args)  # (None, None) unless fault injection is on
    except (ValueError, OSError) as exc:
        raise _UsageError(str(exc)) from None
    # Handlers go in before start-up: a SIGTERM that arrives just after the discovery
    # files appear must still stop the worker gracefully (and remove them).
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        worker = await start_worker(config, hooks)
        await stop.wait()
        await worker.stop()
    finally:
        if control is not None:
            control.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logsetup.configure(args.log_level, sys.stderr)
    if args.sidecar:
        from .sidecar.main import run as run_sidecar

        return run_sidecar(args)
    try:
        config = _config(args)
        admin = (args.enroll_application or args.rotate_credential or args.revoke_credential
                 or args.list_credentials)
        if admin:
            return _administer(args, config)
        if args.scope or args.role or args.tool or args.bearer_fd is not None:
            raise _UsageError("--scope, --role, --tool and --bearer-fd need an enrolment action")
        return asyncio.run(_serve(config, args))
    except _UsageError as exc:
        sys.stderr.write(f"colossus-reference-worker: error: {exc} (see --help)\n")
        return EXIT_USAGE
    except StateLocked as exc:
        sys.stderr.write(f"colossus-reference-worker: error: {exc}\n")
        return EXIT_LOCKED
    except (StateError, StorageUnavailable) as exc:
        sys.stderr.write(f"colossus-reference-worker: error: {exc}\n")
        return EXIT_STATE
    except JournalIntegrityError as exc:
        sys.stderr.write(f"colossus-reference-worker: error: the journal failed its integrity "
                         f"check ({exc}); refusing to start\n")
        return EXIT_INTEGRITY
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        logging.getLogger(__name__).debug("unexpected failure", exc_info=True)
        sys.stderr.write(f"colossus-reference-worker: error: unexpected failure "
                         f"({type(exc).__name__}); rerun with --log-level DEBUG for details\n")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
