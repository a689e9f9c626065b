"""The subcommand command line: every command with its flags, examples and exit codes."""

from __future__ import annotations

import argparse
from pathlib import Path
from textwrap import dedent

# Only the flags of each command: building the parser imports none of the machinery
# behind them (the faults, the engine, the generated messages), which most commands and
# every --help never need.
from ..engine.model import STATUSES
from ..fault_flags import add_arguments as add_fault_arguments
from ..sidecar.options import add_arguments as add_sidecar_arguments
from .admin import add_delivery_flags, add_grant_flags
from .common import EXIT_CODES, PROG, Parser, add_folder_flags, add_json_flag, port_number
from .serve import add_arguments as add_serve_arguments

COMMANDS = ("serve", "dev", "enroll", "credentials", "runs", "journal")

_LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]


def _logging_parent(default_level: str) -> Parser:
    parent = Parser(add_help=False)
    group = parent.add_argument_group("logging (bearers are never logged)")
    group.add_argument("--log-level", default=default_level, choices=_LOG_LEVELS,
                       help=f"the worker's own messages from this level (default "
                            f"{default_level}; libraries log from WARNING only)")
    group.add_argument("--log-format", default="text", choices=["text", "json"],
                       help="text lines for people (default) or one JSON object per line")
    return parent


def _placement_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", choices=["127.0.0.1", "::1"],
                        help="loopback address to listen on")
    parser.add_argument("--port", type=port_number, default=0,
                        help="TCP port (default: the previous one if free, else any)")
    parser.add_argument("--enable-image-input", action="store_true",
                        help="advertise and accept attachments.image_input")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                        help="override one limit, named as GetServerInfo advertises it "
                             "(e.g. create_rate.burst=32, handshake_timeout=10s); "
                             "the override is advertised too")


def _run_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--application", metavar="APP", help="only this application's runs")
    parser.add_argument("--status", action="append", default=[], choices=STATUSES,
                        metavar="STATUS", help="only runs in STATUS (repeatable): "
                        + ", ".join(STATUSES))


def _sub(subs: argparse._SubParsersAction[Parser], name: str, summary: str, examples: str,
         level: str | None = "WARNING") -> Parser:
    """A subcommand; ``level=None`` for a group whose actions take the logging flags."""
    parser: Parser = subs.add_parser(
        name, help=summary, description=summary,
        parents=[] if level is None else [_logging_parent(level)],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + dedent(examples).strip("\n") + "\n\n" + EXIT_CODES,
    )
    return parser


def build() -> Parser:
    root = Parser(
        prog=PROG,
        description="Reference worker for the Colossus public API (colossus.api.v1alpha1).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=dedent(f"""\
            Start here: `{PROG} dev` serves a private development worker and prints
            what each SDK needs to connect. `{PROG} COMMAND --help` shows examples.

            The flag-only forms of earlier releases (`--public-api-dir DIR` to serve,
            `--enroll-application APP`, `--list-credentials`, `--rotate-credential ID`,
            `--revoke-credential ID`, `--sidecar`) still work for this release.
            See conformance/docs/reference-worker.md.

            """) + EXIT_CODES,
    )
    subs = root.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    serve = _sub(subs, "serve", "serve the API until SIGTERM or Ctrl-C", f"""
        {PROG} serve --public-api-dir ~/colossus
        {PROG} serve --public-api-dir ~/colossus --limit max_active_runs=4 --log-format json
        """, level="INFO")
    add_folder_flags(serve)
    _placement_flags(serve)
    serve.add_argument("--allow-crash-step", action="store_true",
                       help="honour the script step 'crash' (tests only)")
    add_sidecar_arguments(serve)
    add_fault_arguments(serve)
    add_serve_arguments(serve)

    dev = _sub(subs, "dev", "serve a development worker: private folder, an enrolled "
               "application, and connection snippets for each SDK", f"""
        {PROG} dev                              # bearer in DIR/dev-app.bearer (0600)
        {PROG} dev --keyring                    # bearer in the OS keyring instead
        {PROG} dev --bearer-fd 3 3> >(my-secret-store put dev-app)  # a fresh one, to a pipe
        {PROG} dev --json                       # the connection facts as one JSON object
        """, level="INFO")
    dev.add_argument("--public-api-dir", type=Path, metavar="DIR",
                     help="folder for the discovery files and the bearer file (default: "
                          "$XDG_STATE_HOME/colossus-reference-worker/dev); created 0700")
    dev.add_argument("--state-dir", type=Path, metavar="DIR",
                     help="private state folder (default: DIR/state under --public-api-dir)")
    dev.add_argument("--application", default="dev-app", metavar="APP",
                     help="application to enrol with every scope (default dev-app)")
    where = dev.add_argument_group(
        "where the bearer goes (at most one; default: DIR/APP.bearer, mode 0600, reused "
        "on the next start)")
    where.add_argument("--keyring", action="store_true",
                       help="the OS keyring instead (service colossus, account APP), "
                            "reused on the next start")
    where.add_argument("--keyring-service", metavar="NAME",
                       help="the OS keyring under service NAME (implies --keyring)")
    where.add_argument("--bearer-fd", type=int, metavar="N",
                       help="a fresh bearer on every start, written to inherited descriptor "
                            "N (a pipe or a socket)")
    where.add_argument("--print-bearer-insecurely", action="store_true",
                       help="a fresh bearer on every start, printed on standard output "
                            "(anyone who sees it can act as the application)")
    _placement_flags(dev)
    add_json_flag(dev)

    enroll = _sub(subs, "enroll", "issue a credential to an application (worker stopped)", f"""
        {PROG} enroll my-app --public-api-dir ~/colossus --scope runs:execute \\
            --scope runs:read --role default --keyring-service colossus
        {PROG} enroll my-app --public-api-dir ~/colossus --scope runs:read \\
            --role default --json --bearer-fd 3 3> >(my-secret-store put my-app)
        """)
    enroll.add_argument("application", metavar="APP", help="application ID ([A-Za-z0-9_-]{1,64})")
    add_folder_flags(enroll)
    add_grant_flags(enroll)
    add_delivery_flags(enroll)
    add_json_flag(enroll)

    creds = _sub(subs, "credentials", "list, rotate or revoke credentials", f"""
        {PROG} credentials list --public-api-dir ~/colossus --json
        {PROG} credentials rotate cred_... --public-api-dir ~/colossus --keyring-service colossus
        {PROG} credentials revoke cred_... --public-api-dir ~/colossus
        """, level=None)
    cred_subs = creds.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser,
                                     required=True)
    c_list = _sub(cred_subs, "list", "non-secret IDs, applications and states (read-only; "
                  "works while the worker serves)", f"""
        {PROG} credentials list --public-api-dir ~/colossus
        """)
    c_rotate = _sub(cred_subs, "rotate", "issue a replacement with the same grant, then revoke "
                    "the old credential (worker stopped)", f"""
        {PROG} credentials rotate cred_... --public-api-dir ~/colossus --bearer-fd 3
        """)
    c_revoke = _sub(cred_subs, "revoke", "revoke a credential for good (worker stopped)", f"""
        {PROG} credentials revoke cred_... --public-api-dir ~/colossus
        """)
    for sub in (c_list, c_rotate, c_revoke):
        add_folder_flags(sub)
        add_json_flag(sub)
    for sub in (c_rotate, c_revoke):
        sub.add_argument("credential_id", metavar="CREDENTIAL_ID")
    add_delivery_flags(c_rotate)

    runs = _sub(subs, "runs", "inspect runs in the state folder (read-only; the worker may "
                "be stopped or serving)", f"""
        {PROG} runs list --public-api-dir ~/colossus --status RUNNING
        {PROG} runs show run_... --public-api-dir ~/colossus --json
        {PROG} runs watch run_... --public-api-dir ~/colossus
        """, level=None)
    run_subs = runs.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser,
                                   required=True)
    r_list = _sub(run_subs, "list", "one line per run: ID, application, status, events, "
                  "creation time", f"""
        {PROG} runs list --public-api-dir ~/colossus --application my-app --json
        """)
    _run_filters(r_list)
    r_show = _sub(run_subs, "show", "one run, fully verified, with every event", f"""
        {PROG} runs show run_... --public-api-dir ~/colossus
        """)
    r_watch = _sub(run_subs, "watch", "print a run's events as they are recorded, until it "
                   "ends", f"""
        {PROG} runs watch run_... --public-api-dir ~/colossus --after 3
        """)
    r_watch.add_argument("--after", type=int, default=0, metavar="SEQUENCE",
                         help="start after this event sequence (default 0: every event)")
    r_watch.add_argument("--interval", type=float, default=0.5, metavar="SECONDS",
                         help="how often to look for new events (default 0.5)")
    for sub in (r_list, r_show, r_watch):
        add_folder_flags(sub)
        add_json_flag(sub)
    for sub in (r_show, r_watch):
        sub.add_argument("run_id", metavar="RUN_ID")

    journal = _sub(subs, "journal", "check the journal's integrity", f"""
        {PROG} journal verify --public-api-dir ~/colossus
        """, level=None)
    j_subs = journal.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser,
                                    required=True)
    j_verify = _sub(j_subs, "verify", "verify every record, chain, sealed head and run "
                    "replay (read-only)", f"""
        {PROG} journal verify --state-dir ~/colossus/state --json
        """)
    add_folder_flags(j_verify)
    add_json_flag(j_verify)
    return root

