"""Sessions for the reference worker (conformance/docs/reference-worker.md).

    worker_tests  pytest conformance/tests/worker: the worker as a real subprocess over
                  real TLS, driven with the SDK's raw grpcio stubs (two test files at
                  once under pytest-xdist; `-- -n 0` for one after another)
    worker_fuzz   hypothesis over raw request bytes per RPC (bounded: 150 examples per RPC,
                  15 s per example), asserting no INTERNAL and no journal write when refused
    worker_lint   ruff and mypy --strict on the worker package (not the generated _gen,
                  nor the faults/artifacts/sidecar modules linted with their own sessions)
    bench_worker  prints GetRun (long/short run), replay (worker/bare grpclib) and polled
                  production ratios from alternating rounds, CreateRun latency and memory
                  with 64 live watches; `./noxw -s bench_worker -- --creates 50` for a quick run;
                  `-- --event-loop asyncio` runs the worker (and the bare server) on that loop,
                  `-- --loops` only the polled production, on uvloop and asyncio side by side
    bench_stall   prints how long costly requests of one application delay another
                  application's GetServerInfo (issue 11's stall figure)
    bench_poll_cost  worker CPU time per GetRun poll and per GetServerInfo, in alternating
                  blocks; `-- --before REV` adds the worker of git revision REV, `-- --loops`
                  compares the worker on uvloop and on asyncio, `-- --spacing-ms 10` spaces
                  the calls as bench_worker's poller does, `-- --spacings` compares spaced
                  calls with calls back to back
"""

from __future__ import annotations

from pathlib import Path

import nox

from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "conformance/requirements-test.txt"
XDIST_PINS = ROOT / "noxsessions/requirements-xdist.txt"
# Modules of the worker package that other sessions own.
_OTHERS = ("_gen", "faults", "artifacts", "sidecar")

DEFAULT_SESSIONS = ["worker_lint", "worker_tests", "worker_fuzz"]


def _install(session: nox.Session) -> None:
    session.install("-r", str(PINS))
    install_local(session, "conformance")  # the shared wheel, as users install it


def _pytest(session: nox.Session, target: str, *, timeout: int, parallel: tuple[str, ...] = ()) -> None:
    _install(session)
    session.run(
        "pytest", "-p", "no:cacheprovider", "-q", "--timeout", str(timeout), *parallel,
        str(ROOT / target), *session.posargs,
    )


@nox.session
def worker_tests(session: nox.Session) -> None:
    """Every W requirement in scope, against real worker processes."""
    session.install("-r", str(XDIST_PINS))
    # The tests mostly wait on worker processes (start-up, restarts, kill -9, time-outs),
    # so two run at once, a test file per xdist process (files share module-scoped
    # workers); `-- -n 0` runs them one after another. Not more: the worker fixture gives a
    # worker 15 s to start, which a loaded 2-CPU machine (load 15) exceeded with three.
    # --durations: the log names the slowest tests, so CI time can be looked after.
    _pytest(session, "conformance/tests/worker", timeout=120,
            parallel=("-n", "2", "--dist", "loadfile", "--durations", "15"))


@nox.session
def worker_fuzz(session: nox.Session) -> None:
    """Fuzz every RPC with raw request bytes against a real worker (bounded)."""
    _pytest(session, "conformance/tests/worker/fuzz_requests.py", timeout=300)


@nox.session
def worker_lint(session: nox.Session) -> None:
    """ruff (rules in conformance/pyproject.toml) and mypy --strict."""
    _install(session)
    package = ROOT / "conformance/src/colossus_reference_worker"
    excludes = [arg for name in _OTHERS for arg in ("--exclude", str(package / name))]
    session.run("ruff", "check", "--config", str(ROOT / "conformance/pyproject.toml"),
                str(package), str(ROOT / "conformance/tests/worker"), *excludes)
    session.run(
        "mypy", "--strict", "--config-file", str(ROOT / "conformance/pyproject.toml"),
        "--exclude", "|".join(f"{name}/" for name in _OTHERS), str(package),
    )


@nox.session
def bench_stall(session: nox.Session) -> None:
    """Print the longest delay a costly request causes to another application."""
    _install(session)
    session.run("python", str(ROOT / "conformance/tests/worker/bench_stall.py"), *session.posargs)


@nox.session
def bench_worker(session: nox.Session) -> None:
    """Print the worker's benchmark figures (not a timed test)."""
    _install(session)
    session.run("python", str(ROOT / "conformance/tests/worker/bench_worker.py"),
                *session.posargs)


@nox.session
def bench_poll_cost(session: nox.Session) -> None:
    """Print the worker CPU time one GetRun poll costs (optionally against a git revision)."""
    _install(session)
    session.run("python", str(ROOT / "conformance/tests/worker/bench_poll_cost.py"),
                *session.posargs)
