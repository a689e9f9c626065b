"""Sessions for the Python SDK (sdk/python).

    python_sdk_tests     unit tests (in-process fake worker) and integration tests (the real
                         reference worker, installed from ./conformance, over real TLS)
    python_sdk_lint      ruff (lint + format check) and mypy --strict
    python_sdk_examples  runs every script in sdk/python/examples against the reference worker
    bench_python_sdk     watch throughput, connect time and RSS growth (not in the default run)

Arguments after `--` go to pytest (tests) or to the benchmark script.
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk/python"
PIP = "--disable-pip-version-check"

DEFAULT_SESSIONS = ["python_sdk_lint", "python_sdk_tests", "python_sdk_examples"]


# The worker is installed into these sessions, so integration tests must run, never skip.
REQUIRE_WORKER = {"COLOSSUS_REQUIRE_WORKER": "1"}


def _install(session: nox.Session, *, worker: bool) -> None:
    session.install(PIP, "-r", str(SDK / "requirements-dev.txt"))
    session.install(PIP, "--no-deps", str(SDK))
    if worker:
        session.install(PIP, str(ROOT / "conformance"))


@nox.session
def python_sdk_tests(session: nox.Session) -> None:
    """Unit and integration tests; a skipped integration test prints its reason (-ra)."""
    _install(session, worker=True)
    session.run(
        "pytest", "-p", "no:cacheprovider", "-ra", "-q", str(SDK / "tests"),
        "--rootdir", str(SDK), "--ignore", str(SDK / "tests/test_examples.py"), *session.posargs,
        env=REQUIRE_WORKER,
    )


@nox.session
def python_sdk_lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy --strict over the hand-written code."""
    _install(session, worker=False)
    with session.chdir(SDK):
        session.run("ruff", "check", "src", "tests", "examples", "benchmarks")
        session.run("ruff", "format", "--check", "src", "tests", "examples", "benchmarks")
        session.run("mypy", "--strict", "src/colossus", "examples", "benchmarks")


@nox.session
def python_sdk_examples(session: nox.Session) -> None:
    """Each example is a runnable program; they start the reference worker themselves."""
    _install(session, worker=True)
    session.run(
        "pytest", "-p", "no:cacheprovider", "-ra", "-q",
        str(SDK / "tests/test_examples.py"), "--rootdir", str(SDK), *session.posargs,
        env=REQUIRE_WORKER,
    )


@nox.session
def bench_python_sdk(session: nox.Session) -> None:
    """Prints the SDK's figures: watch throughput ratio, connect time, RSS growth."""
    _install(session, worker=True)
    session.run("python", str(SDK / "benchmarks/bench.py"), *session.posargs)
