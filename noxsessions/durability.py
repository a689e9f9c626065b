"""Sessions for the reference worker's durability, fault-injection, sidecar and
artifact features (W12, W13, W15, W16, ArtifactService).

    durability_tests   pytest conformance/tests/durability (real subprocesses, real TLS)
    bench_durability   ratios that show appends and listing stay cheap as the journal
                       grows, recovery time and a kill -9 crash loop

Both install the worker package and the Python SDK (whose grpcio stubs the tests use
as raw clients) into the session's virtual environment.
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_SESSIONS = ["durability_tests"]


def _install(session: nox.Session) -> None:
    session.install(
        "--disable-pip-version-check",
        str(ROOT / "conformance"),
        str(ROOT / "sdk/python"),
        "pytest==9.2.0",
    )


@nox.session
def durability_tests(session: nox.Session) -> None:
    """Fault injection, sidecar bootstrap, artifacts, graceful stop and crash recovery."""
    _install(session)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        str(ROOT / "conformance/tests/durability"),
        *session.posargs,
    )


@nox.session
def bench_durability(session: nox.Session) -> None:
    """Print append/cancel and ListRuns cost ratios, recovery time and crash-loop losses.

    `./noxw -s bench_durability -- --quick` shrinks every size for a smoke run.
    """
    _install(session)
    session.run("python", str(ROOT / "conformance/tests/durability/bench.py"), *session.posargs)
