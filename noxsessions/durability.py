"""Sessions for the reference worker's fault injection (W15), sidecar bootstrap (W16),
ArtifactService, graceful stop and crash durability (W12, W13).

    durability_tests   pytest conformance/tests/durability: real worker subprocesses,
                       real TLS, the SDK's generated grpcio stubs as raw clients
    durability_lint    ruff and mypy --strict on faults/, sidecar/ and artifacts/
    bench_durability   cost ratios of appends and listing as the journal grows,
                       recovery time, start-up with 100,000 stored runs over an empty
                       journal, and a kill -9 crash loop's losses

`./noxw -s bench_durability -- --quick` shrinks every size for a smoke run.
"""

from __future__ import annotations

from pathlib import Path

import nox

from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "conformance/requirements-test.txt"
PACKAGE = ROOT / "conformance/src/colossus_reference_worker"
OWNED = ("faults", "sidecar", "artifacts")
TESTS = ROOT / "conformance/tests/durability"

DEFAULT_SESSIONS = ["durability_lint", "durability_tests"]


def _install(session: nox.Session) -> None:
    session.install("-r", str(PINS))
    install_local(session, "conformance")  # the shared wheel, as users install it


@nox.session
def durability_tests(session: nox.Session) -> None:
    """Faults, listener variants, sidecar, artifacts, graceful stop, kill -9 crash loop."""
    _install(session)
    session.run("pytest", "-p", "no:cacheprovider", "-q", "--timeout", "300", str(TESTS),
                *session.posargs)


@nox.session
def durability_lint(session: nox.Session) -> None:
    """ruff (rules in conformance/pyproject.toml) and mypy --strict on the owned modules."""
    _install(session)
    config = str(ROOT / "conformance/pyproject.toml")
    paths = [str(PACKAGE / name) for name in OWNED]
    session.run("ruff", "check", "--config", config, *paths, str(TESTS))
    session.chdir(ROOT / "conformance/src")
    session.run("mypy", "--strict", "--config-file", config,
                *(f"colossus_reference_worker/{name}" for name in OWNED))


@nox.session
def bench_durability(session: nox.Session) -> None:
    """Print append/cancel and ListRuns cost ratios, recovery time and crash-loop losses."""
    _install(session)
    session.run("python", str(TESTS / "bench_durability.py"), *session.posargs)
