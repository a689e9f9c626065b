"""Entry point for ./noxw. Sessions live in one module per area under noxsessions/."""

import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))

from noxsessions import codegen  # noqa: E402
from noxsessions import conformance  # noqa: E402
from noxsessions import durability  # noqa: E402
from noxsessions import python_sdk  # noqa: E402
from noxsessions import worker  # noqa: E402

# What a bare ./noxw (and so CI) runs: every area's default sessions.
nox.options.sessions = [
    *codegen.DEFAULT_SESSIONS,
    *worker.DEFAULT_SESSIONS,
    *durability.DEFAULT_SESSIONS,
    *python_sdk.DEFAULT_SESSIONS,
    *conformance.DEFAULT_SESSIONS,
]
