"""The fault-injection flags of the worker's command line, without the faults themselves.

Every command line of the worker lists these flags, and most runs (enrolment, inspection)
never arm a fault: kept outside the ``faults`` package (whose import loads all of it), they
spare those runs the fault machinery's imports.
"""

from __future__ import annotations

import argparse
from enum import Enum

# Most connections ``--fault-silent-close`` may drop (as for the ``silent_close`` fault).
MAX_STARTUP_SILENT_CLOSES = 64


class ListenerVariant(str, Enum):
    """Values of ``--fault-listener``."""

    TLS12 = "tls12"
    FOREIGN_LEAF = "foreign-leaf"
    LEAF_WITH_INTERMEDIATE = "leaf-with-intermediate"
    NO_H2_ALPN = "no-h2-alpn"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The fault-injection flags of the worker's command line (off by default)."""
    group = parser.add_argument_group(
        "fault injection for the conformance suite (see conformance/docs/fault-control.md)")
    group.add_argument("--fault-control-socket", metavar="PATH",
                       help="create a 0600 Unix socket that arms deliberate faults")
    group.add_argument("--fault-listener", choices=[v.value for v in ListenerVariant],
                       help="serve a deliberately wrong TLS listener (needs "
                            "--fault-control-socket)")
    group.add_argument("--fault-silent-close", type=int, metavar="N",
                       help="close the first N connections accepted after start-up before "
                            f"any TLS byte (1-{MAX_STARTUP_SILENT_CLOSES}; needs "
                            "--fault-control-socket)")
