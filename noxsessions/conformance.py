"""Sessions for the conformance suite (conformance/README.md).

    conformance           run every case for every SDK that has a conformance client;
                          arguments after `--` go to the runner, for example
                          `./noxw -s conformance -- --run 'pin-checks.*' --sdk python`
                          or `./noxw -s conformance -- --list`; COLOSSUS_CONFORMANCE_ARGS adds
                          runner arguments from the environment (for runs of many sessions)
    conformance_lint      ruff (lint + format check) over the runner, its tests and the Python
                          client; mypy --strict over the runner package
    conformance_mutants   the mutation harness (not in the default list): each mutant of
                          conformance/mutants/<sdk>.yaml is planted in a scratch copy of the
                          SDK and must fail at least one case; writes results/mutants.md
    conformance_selftest  pytest of the runner itself (catalogue, protocol codec,
                          assertions, known-failure rules, crash handling with a fake
                          client) and a mutation check: the real SDK with one behaviour
                          broken on purpose (dedup, gap check, clean-close reconciliation,
                          TLS pre-flight, GetServerInfo check, no-retry rule, bearer
                          hygiene) must fail the cases that guard it
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import nox

from noxsessions._cargo import fetch, mutants_env
from noxsessions._lane_facts import CONFORMANCE_CLIENTS, lane
from noxsessions.typescript_sdk import _npm_ci, conformance_node, node_first_on_path
from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_SESSIONS = ["conformance_lint", "conformance_selftest", "conformance"]
LINT_PINS = ROOT / "noxsessions" / "requirements-conformance-lint.txt"
XDIST_PINS = ROOT / "noxsessions" / "requirements-xdist.txt"
RUNNER_PATHS = ["src/colossus_conformance", "clients/python", "clients/python-async", "tests/runner"]


@nox.session
@lane(locks=[CONFORMANCE_CLIENTS], size=2)
def conformance(session: nox.Session) -> None:
    """Start the reference worker and drive every SDK's client through the case catalogue."""
    # The runner and the reference worker share one package (exact pins in its
    # pyproject); the Python SDK is the library under test for the Python client.
    install_local(session, "conformance", "sdk/python")
    # Runner arguments for a run of many sessions, where `--` would reach every session
    # (bench_ci: `--results-dir DIR --jobs 1`).
    extra = shlex.split(os.environ.get("COLOSSUS_CONFORMANCE_ARGS", ""))
    # The TypeScript client's build installs the SDK's node_modules when they are missing;
    # the sessions' npm ci (under its file lock) does it first, as other sessions may too.
    _npm_ci(session)
    # The Rust client builds (--offline) into the clone's cargo target folder outside it.
    env = fetch(session)
    # The typescript column runs on the Active LTS Node (sdk/typescript/runtimes), as users
    # install it today; typescript_conformance_runtimes covers the other supported lines.
    node = conformance_node(session)
    env.update(node_first_on_path(session, node))
    session.log(f"typescript column on {node}")
    session.run(
        "colossus-conformance", "--suite-dir", str(ROOT / "conformance"), *extra, *session.posargs, env=env
    )


@nox.session
def conformance_mutants(session: nox.Session) -> None:
    """Mutation harness: plant each mutant of mutants/<sdk>.yaml in a scratch copy of that SDK
    and report which case kills it (slow, not in the default list). Example:
    `./noxw -s conformance_mutants -- --sdk python [--mutant ID] [--column python-async]`."""
    install_local(session, "conformance", "sdk/python")
    fetch(session)
    env = mutants_env()
    # The typescript column runs on the same Node as in the conformance session.
    env.update(node_first_on_path(session, conformance_node(session)))
    session.run(
        "python", "-m", "colossus_conformance.mutation", "--suite-dir", str(ROOT / "conformance"),
        *session.posargs, env=env,
    )


@nox.session
def conformance_selftest(session: nox.Session) -> None:
    """Unit tests of the runner, plus a mutation check against the real worker and SDK."""
    session.install("pytest==9.2.0", "-r", str(XDIST_PINS))
    install_local(session, "conformance", "sdk/python")
    # Most of these tests wait on real workers and clients (about 40 s of CPU in 3 minutes),
    # so four run at once; `-- -n 0` runs them one after another.
    session.run(
        "pytest", "-p", "no:cacheprovider", "-q", "-n", "4", "--dist", "worksteal",
        str(ROOT / "conformance/tests/runner"), *session.posargs,
    )


@nox.session
def conformance_lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy --strict for the runner."""
    session.install("-r", str(LINT_PINS))
    install_local(session, "conformance")
    session.chdir(ROOT / "conformance")
    session.run("ruff", "check", *RUNNER_PATHS)
    session.run("ruff", "format", "--check", *RUNNER_PATHS)
    session.run("mypy", "src/colossus_conformance")
