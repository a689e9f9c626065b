"""``colossus-reference-worker``: subcommands, plus the flag-only forms of earlier releases.

Commands (each with examples under ``--help``): ``serve``, ``dev``, ``enroll``,
``credentials list|rotate|revoke``, ``runs list|show|watch`` and ``journal verify``;
their code lives in :mod:`.commands`. A command line that starts with an option
is read the old way (``--public-api-dir DIR`` serves, ``--enroll-application``
enrols, ``--sidecar`` bootstraps a sidecar...), kept as aliases for one release.

Exit codes: 0 success; 2 bad command line; 3 the state folder is in use by a
running worker; 4 the state or public API folder is missing, unreadable, foreign
or unsafe; 5 the bearer could not be delivered (the credential stays pending);
6 the journal failed its integrity check; 7 no such run; 1 anything else.
"""

from __future__ import annotations

import argparse
import errno
import logging
import sys
from pathlib import Path

from . import logsetup
from .commands import admin, parser
from .commands.common import (
    EXIT_CODES,
    EXIT_DELIVERY,
    EXIT_FAILURE,
    EXIT_INTEGRITY,
    EXIT_LOCKED,
    EXIT_NOT_FOUND,
    EXIT_STATE,
    EXIT_USAGE,
    PROG,
    NotFound,
    Parser,
    UsageError,
    fail,
    port_number,
    state_dir_of,
    worker_config,
)
from .commands.serve import add_arguments as add_serve_arguments
from .config import SCOPES
from .errors import JournalIntegrityError, StorageUnavailable
from .fault_flags import add_arguments as add_fault_arguments
from .sidecar.options import add_arguments as add_sidecar_arguments
from .state import StateError, StateLocked

__all__ = ["EXIT_DELIVERY", "EXIT_INTEGRITY", "EXIT_LOCKED", "EXIT_NOT_FOUND", "EXIT_STATE",
           "EXIT_USAGE", "build_legacy_parser", "main"]


def build_legacy_parser() -> argparse.ArgumentParser:
    """The flag-only command line of earlier releases (deprecated, kept for one release)."""
    p = Parser(
        prog=PROG,
        description="Reference worker for the Colossus public API (colossus.api.v1alpha1). "
                    "Deprecated flag-only form; see `colossus-reference-worker --help`.",
        epilog=EXIT_CODES,
    )
    p.add_argument("--public-api-dir", type=Path, metavar="DIR",
                   help="0700 folder for endpoint.json and certificate.pem")
    p.add_argument("--state-dir", type=Path, metavar="DIR",
                   help="private state folder (default: DIR/state under --public-api-dir)")
    p.add_argument("--host", default="127.0.0.1", choices=["127.0.0.1", "::1"],
                   help="loopback address to listen on")
    p.add_argument("--port", type=port_number, default=0,
                   help="TCP port (default: previous or any)")
    p.add_argument("--enable-image-input", action="store_true",
                   help="advertise and accept attachments.image_input")
    p.add_argument("--allow-crash-step", action="store_true",
                   help="honour the script step 'crash' (tests only)")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="override one limit, named as GetServerInfo advertises it")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="log the worker's own messages to stderr from this level "
                        "(default WARNING; libraries log from WARNING only); "
                        "bearers are never logged")
    p.add_argument("--log-format", default="text", choices=["text", "json"],
                   help="text lines (default) or one JSON object per line")

    group = p.add_argument_group("credential administration (worker stopped)")
    group.add_argument("--enroll-application", metavar="APP", help="issue a credential to APP")
    group.add_argument("--scope", action="append", default=[], choices=SCOPES, metavar="SCOPE",
                       help="grant a scope (repeatable): " + ", ".join(SCOPES))
    group.add_argument("--role", action="append", default=[], help="grant a logical role")
    group.add_argument("--tool", action="append", default=[], help="grant a tool")
    group.add_argument("--rotate-credential", metavar="ID",
                       help="issue a replacement with the same grant, then revoke ID")
    group.add_argument("--revoke-credential", metavar="ID", help="revoke ID permanently")
    group.add_argument("--list-credentials", action="store_true",
                       help="print non-secret credential IDs, applications and states")
    group.add_argument("--bearer-fd", type=int, metavar="N",
                       help="write the one-time bearer to inherited descriptor N")
    group.add_argument("--keyring-service", metavar="NAME",
                       help="store the bearer in the OS credential store under NAME")
    group.add_argument("--keyring-account", metavar="ACCOUNT",
                       help="account for --keyring-service (default: the application ID)")
    group.add_argument("--output", choices=["text", "json"], default="text",
                       help="print key: value lines (default) or one JSON object")
    add_sidecar_arguments(p)
    add_fault_arguments(p)
    add_serve_arguments(p)
    return p


def _legacy(args: argparse.Namespace) -> int:
    """Map the flag-only form onto the commands."""
    from .commands.serve import run_serve

    actions = [a for a in (args.enroll_application, args.rotate_credential,
                           args.revoke_credential) if a] + ([1] if args.list_credentials else [])
    if args.public_api_dir is None and args.state_dir is None:
        raise UsageError("--public-api-dir is required")
    if not actions:
        if args.scope or args.role or args.tool or args.bearer_fd is not None:
            raise UsageError("--scope, --role, --tool and --bearer-fd need an enrolment action")
        return run_serve(worker_config(args), args)
    if len(actions) != 1:
        raise UsageError("choose one of --enroll-application, --rotate-credential, "
                         "--revoke-credential, --list-credentials")
    if args.list_credentials:
        return admin.list_credentials(args, state_dir_of(args))
    if args.enroll_application:
        return admin.enroll(args, worker_config(args), args.enroll_application)
    if args.rotate_credential:
        return admin.rotate(args, worker_config(args), args.rotate_credential)
    return admin.revoke(args, worker_config(args), args.revoke_credential)


def _command(args: argparse.Namespace) -> int:
    """Run one subcommand."""
    command, action = args.command, str(getattr(args, "action", ""))
    if command == "serve":
        from .commands.serve import run_serve

        return run_serve(worker_config(args), args)
    if command == "dev":
        from .commands.dev import run_dev

        return run_dev(args)
    if command == "enroll":
        return admin.enroll(args, worker_config(args), args.application)
    if command == "credentials":
        if action == "list":
            return admin.list_credentials(args, state_dir_of(args))
        if action == "rotate":
            return admin.rotate(args, worker_config(args), args.credential_id)
        return admin.revoke(args, worker_config(args), args.credential_id)
    if command == "runs":
        from .commands import runs

        handler = {"list": runs.run_list, "show": runs.run_show, "watch": runs.run_watch}[action]
        return handler(args, state_dir_of(args))
    from .commands.journal_verify import journal_verify

    return journal_verify(args, state_dir_of(args))


def _parse(argv: list[str]) -> tuple[argparse.Namespace, bool]:
    """``(args, legacy)``: a leading command word selects the subcommand parser."""
    first = argv[0] if argv else None
    if first is None or first in parser.COMMANDS or first in ("-h", "--help"):
        args = parser.build().parse_args(argv)
        if args.command is None:
            parser.build().error("choose a command (dev, serve, enroll, credentials, runs, "
                                 "journal)")
        return args, False
    return build_legacy_parser().parse_args(argv), True


def main(argv: list[str] | None = None) -> int:
    args, legacy = _parse(sys.argv[1:] if argv is None else argv)
    logsetup.configure(args.log_level, sys.stderr, args.log_format)
    if getattr(args, "sidecar", False):
        from .sidecar.main import run as run_sidecar

        return run_sidecar(args)
    try:
        return _legacy(args) if legacy else _command(args)
    except UsageError as exc:
        fail(f"{exc} (see --help)")
        return EXIT_USAGE
    except NotFound as exc:
        fail(str(exc))
        return EXIT_NOT_FOUND
    except StateLocked as exc:
        fail(str(exc))
        return EXIT_LOCKED
    except (StateError, StorageUnavailable) as exc:
        fail(str(exc))
        return EXIT_STATE
    except JournalIntegrityError as exc:
        fail(f"the journal failed its integrity check ({exc})"
             + ("; refusing to start" if legacy or args.command in ("serve", "dev") else ""))
        return EXIT_INTEGRITY
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
            # Only binding the listener fails this way: an explicit --port already taken.
            fail(f"cannot listen on {getattr(args, 'host', '')} port "
                 f"{getattr(args, 'port', '')}: {exc.strerror} (choose another --port, "
                 "or 0 for any free port)")
            return EXIT_FAILURE
        logging.getLogger(__name__).debug("unexpected failure", exc_info=True)
        fail(f"unexpected failure ({type(exc).__name__}); rerun with --log-level DEBUG "
             "for details")
        return EXIT_FAILURE


if __name__ == "__main__":
    raise SystemExit(main())
