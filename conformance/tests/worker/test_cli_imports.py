"""What a command line loads before it runs: the flags only.

Every enrolment, rotation and inspection is a process of its own, and suites start hundreds
of them. Building the parser (plain or flag-only form) must not import the fault machinery,
the engine's validation or the generated messages; only the command that needs them does.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "colossus_reference_worker.faults",
    "colossus_reference_worker._gen",
    "colossus_reference_worker.engine.validation",
    "colossus_reference_worker.sidecar.main",
    "colossus_reference_worker.server",
    "grpclib.server",
    "cryptography.x509",
)

PROBE = """
import json, sys
from colossus_reference_worker import cli
cli.build_legacy_parser().parse_args(["--public-api-dir", "/x", "--list-credentials"])
from colossus_reference_worker.commands import parser
parser.build().parse_args(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules)))
"""


@pytest.mark.parametrize("argv", [["enroll", "--public-api-dir", "/x", "app"],
                                  ["runs", "list", "--public-api-dir", "/x"]])
def test_building_the_command_line_imports_only_the_flags(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          check=True, timeout=60)
    loaded = json.loads(done.stdout)
    heavy = sorted(m for m in loaded if m.startswith(HEAVY))
    assert heavy == []
