"""Sessions for the conformance suite (conformance/README.md).

    conformance           run every case for every SDK that has a conformance client;
                          arguments after `--` go to the runner, for example
                          `./noxw -s conformance -- --run 'pin-checks.*' --sdk python`
                          or `./noxw -s conformance -- --list`
    conformance_selftest  pytest of the runner itself (catalogue, protocol codec,
                          assertions, known-failure rules, crash handling with a fake
                          client) and a mutation check: an SDK with dedup or clean-close
                          reconciliation broken on purpose must fail the guarding cases
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_SESSIONS = ["conformance_selftest", "conformance"]


@nox.session
def conformance(session: nox.Session) -> None:
    """Start the reference worker and drive every SDK's client through the case catalogue."""
    # The runner and the reference worker share one package (exact pins in its
    # pyproject); the Python SDK is the library under test for the Python client.
    session.install("--disable-pip-version-check", str(ROOT / "conformance"), str(ROOT / "sdk/python"))
    session.run("colossus-conformance", "--suite-dir", str(ROOT / "conformance"), *session.posargs)


@nox.session
def conformance_selftest(session: nox.Session) -> None:
    """Unit tests of the runner, plus a mutation check against the real worker and SDK."""
    session.install(
        "--disable-pip-version-check", str(ROOT / "conformance"), str(ROOT / "sdk/python"), "pytest==9.2.0"
    )
    session.run(
        "pytest", "-p", "no:cacheprovider", "-q",
        str(ROOT / "conformance/tests/runner"), *session.posargs,
    )
