"""Server conformance: the case catalogue that judges a worker (conformance/docs/worker-protocol.md).

    server_conformance          the server cases against the reference worker (its manifest,
                                conformance/workers/reference.json); writes
                                results/server-matrix.md and results/server-junit.xml.
                                Arguments after `--` go to the runner, for example
                                `-- --run 'server.watch.*'` or `-- --worker other.json`
    server_conformance_mutants  the worker mutation harness (not in the default list): each
                                planted bug of conformance/mutants/worker.yaml runs in a
                                scratch copy of the reference worker and must fail a case;
                                prints the kill rate, writes results/server-mutants.md
"""

from __future__ import annotations

from pathlib import Path

import nox

from noxsessions._lane_facts import H2SPEC_BINARY, lane
from noxsessions._wheels import install_local
from noxsessions.h2spec import _h2spec_binary

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "conformance"
REFERENCE = SUITE / "workers" / "reference.json"

DEFAULT_SESSIONS = ["server_conformance"]


def _runner_args(session: nox.Session) -> list[str]:
    # h2spec is one server case; its pinned binary is the same one `./noxw -s h2spec` builds.
    # With --install-only nox runs no command, so there is nothing to build and nothing to run.
    if session._runner.global_config.install_only:  # noqa: SLF001 - nox has no public flag for it
        return ["--suite-dir", str(SUITE)]
    return ["--suite-dir", str(SUITE), "--h2spec", str(_h2spec_binary(session))]


@nox.session
@lane(locks=[H2SPEC_BINARY])
def server_conformance(session: nox.Session) -> None:
    """Every server case against the reference worker (or `-- --worker MANIFEST`)."""
    install_local(session, "conformance", "sdk/python")
    args = session.posargs if "--worker" in session.posargs else ["--worker", str(REFERENCE), *session.posargs]
    session.run("colossus-conformance", *_runner_args(session), *args)


@nox.session
@lane(locks=[H2SPEC_BINARY])
def server_conformance_mutants(session: nox.Session) -> None:
    """Plant each bug of mutants/worker.yaml in a scratch copy of the reference worker; every one
    must fail a server case (slow, not in the default list)."""
    install_local(session, "conformance", "sdk/python")
    session.run(
        "python", "-m", "colossus_conformance.server.mutation", *_runner_args(session),
        "--worker", str(REFERENCE), *session.posargs,
    )
