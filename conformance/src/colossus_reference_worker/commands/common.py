"""What every subcommand shares: exit codes, the parser class, errors and output."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from ..config import Limits, WorkerConfig

PROG = "colossus-reference-worker"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_LOCKED = 3
EXIT_STATE = 4
EXIT_DELIVERY = 5
EXIT_INTEGRITY = 6
EXIT_NOT_FOUND = 7

EXIT_CODES = (
    f"exit codes: {EXIT_OK} ok; {EXIT_USAGE} bad command line; {EXIT_LOCKED} state folder in "
    f"use by a running worker; {EXIT_STATE} state or public API folder missing, unreadable, "
    f"foreign or unsafe, or the state folder not writable (read-only, full); "
    f"{EXIT_DELIVERY} bearer not delivered (credential left pending); "
    f"{EXIT_INTEGRITY} journal damaged or failed its integrity check (records removed, "
    f"not an SQLite file); {EXIT_NOT_FOUND} no such run; "
    f"{EXIT_FAILURE} anything else"
)


class UsageError(Exception):
    """A malformed command line; the message names the flag and what was expected."""


class NotFound(Exception):
    """The named run (or other object) does not exist in the state folder."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit with ``EXIT_USAGE``."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{PROG}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free port) to 65535."""
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected a TCP port from 0 (any free port) to 65535, got {text!r}")
    return value


def fail(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {message}\n")


def emit(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """One result: a JSON object with ``--json``, else ``key: value`` lines."""
    if getattr(args, "json", False) or getattr(args, "output", "text") == "json":
        print(json.dumps(data), flush=True)
    else:
        for key, value in data.items():
            print(f"{key}: {value}", flush=True)


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False) or getattr(args, "output", "text") == "json")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print JSON (one object per line) for scripts")


def add_folder_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--public-api-dir", type=Path, metavar="DIR",
                        help="0700 folder for endpoint.json and certificate.pem")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="private state folder (default: DIR/state under --public-api-dir)")


def state_dir_of(args: argparse.Namespace) -> Path:
    if args.state_dir is not None:
        return Path(args.state_dir).absolute()
    if args.public_api_dir is not None:
        return Path(args.public_api_dir).absolute() / "state"
    raise UsageError("give --public-api-dir DIR or --state-dir DIR")


def parse_limits(items: list[str]) -> Limits:
    limits = Limits()
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--limit expects NAME=VALUE, got {item!r}")
        try:
            limits.override(name, value)
        except ValueError as exc:
            raise UsageError(f"--limit: {exc}") from None
    try:
        limits.check_consistent()
    except ValueError as exc:
        raise UsageError(f"--limit: {exc}") from None
    return limits


def worker_config(args: argparse.Namespace) -> WorkerConfig:
    """The worker configuration the folder, placement and limit flags describe."""
    state = state_dir_of(args)
    public = Path(args.public_api_dir).absolute() if args.public_api_dir else None
    return WorkerConfig(
        state_dir=state, public_api_dir=public, host=getattr(args, "host", "127.0.0.1"),
        port=getattr(args, "port", 0),
        enable_image_input=getattr(args, "enable_image_input", False),
        allow_crash_step=getattr(args, "allow_crash_step", False),
        limits=parse_limits(getattr(args, "limit", [])),
    )
