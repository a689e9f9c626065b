"""The sidecar flags of the worker's command line, without the sidecar start-up itself
(every command line lists them; only ``--sidecar`` runs need the rest)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sidecar flags of the worker's command line."""
    group = parser.add_argument_group("sidecar placement (see conformance/docs/sidecar.md)")
    group.add_argument("--sidecar", action="store_true",
                       help="start as a private sidecar bootstrapped over inherited pipes")
    group.add_argument("--bootstrap-in-fd", type=int, metavar="N",
                       help="inherited descriptor carrying the bootstrap request; "
                            "end-of-file on it stops the worker")
    group.add_argument("--bootstrap-out-fd", type=int, metavar="N",
                       help="inherited descriptor that receives the one reply")
