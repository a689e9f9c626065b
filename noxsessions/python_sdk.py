"""Sessions for the Python SDK (sdk/python).

    python_sdk_tests     unit tests (in-process fake worker) and integration tests (the real
                         reference worker, installed from ./conformance, over real TLS)
    python_sdk_lint      ruff (lint + format check), mypy --strict, and the built sdist and
                         wheel through twine check --strict and check-wheel-contents
    python_sdk_tox       sdk/python/tox.ini: unit tests on Python 3.12 and 3.13 and on the
                         lowest allowed dependencies on 3.11 (3.11 runs the full suite above)
    python_sdk_docs      the API reference (sdk/python/docs) built with Sphinx, pinned, from the
                         wheel: warnings are errors, references nitpicky, and a public name
                         without a docstring fails
    python_sdk_examples  runs every script in sdk/python/examples, every Python block of the
                         README and the Python snippet `dev` prints, against the reference worker
    bench_python_sdk     the watch's per-event cost, watch throughput, connect time and RSS
                         growth (not in the default run)

Arguments after `--` go to pytest (tests) or to the benchmark script.
"""

from __future__ import annotations

from pathlib import Path

import nox

from noxsessions._lane_facts import PYTHON_SDK_TREE, lane
from noxsessions._wheels import build_sdist_and_wheel, install_local

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk/python"

DEFAULT_SESSIONS = [
    "python_sdk_lint",
    "python_sdk_tests",
    "python_sdk_examples",
    "python_sdk_tox",
    "python_sdk_docs",
]


# The worker is installed into these sessions, so integration tests must run, never skip.
REQUIRE_WORKER = {"COLOSSUS_REQUIRE_WORKER": "1"}


def _install(session: nox.Session, *, worker: bool) -> None:
    session.install("-r", str(SDK / "requirements-dev.txt"))
    install_local(session, SDK, deps=False)
    if worker:
        install_local(session, "conformance")


@nox.session
def python_sdk_tests(session: nox.Session) -> None:
    """Unit and integration tests; a skipped integration test prints its reason (-ra)."""
    _install(session, worker=True)
    # An unclosed file, socket or channel anywhere in the run fails it.
    strict = ["-W", "error::ResourceWarning", "-W", "error::pytest.PytestUnraisableExceptionWarning"]
    session.run(
        "pytest", "-p", "no:cacheprovider", "-ra", "-q", *strict, str(SDK / "tests"),
        "--rootdir", str(SDK), "--ignore", str(SDK / "tests/test_examples.py"),
        "--ignore", str(SDK / "tests/test_readme.py"), *session.posargs,
        env=REQUIRE_WORKER,
    )


@nox.session
@lane(locks=[PYTHON_SDK_TREE])
def python_sdk_lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy --strict over the hand-written code."""
    _install(session, worker=False)
    with session.chdir(SDK):
        session.run("ruff", "check", "src", "tests", "examples", "benchmarks")
        session.run("ruff", "format", "--check", "src", "tests", "examples", "benchmarks")
        session.run("mypy", "--strict", "src/colossus_agent_client", "examples", "benchmarks")
    session.install("-r", str(SDK / "requirements-release.txt"))
    dist = Path(session.create_tmp()).resolve() / "dist"
    build_sdist_and_wheel(session, SDK, dist)
    artifacts = sorted(str(p) for p in dist.glob("*"))
    session.run("twine", "check", "--strict", *artifacts)
    # The config in sdk/python/pyproject.toml says why W002 is ignored.
    wheels = [a for a in artifacts if a.endswith(".whl")]
    with session.chdir(SDK):
        session.run("check-wheel-contents", *wheels)


@nox.session
def python_sdk_docs(session: nox.Session) -> None:
    """sphinx-build -W -n (nitpicky) over the installed wheel; the HTML goes to the session's tmp."""
    session.install("-r", str(SDK / "docs/requirements.txt"))
    install_local(session, SDK)
    out = Path(session.create_tmp()).resolve() / "docs-html"
    # -E: read every source again, so a warning is never hidden by a cached page.
    session.run("sphinx-build", "-W", "--keep-going", "-n", "-E", "-b", "html", str(SDK / "docs"), str(out))
    session.log(f"API reference: {out / 'index.html'}")


# tox (sdk/python/tox.ini) is the package's own runner; this session drives it for CI.
# 3.11 is left out: python_sdk_tests runs the full suite on it.
TOX_ENVS = "py312,py313,min"


def _pyenv_path() -> str:
    """PATH with every pyenv-installed CPython 3.11-3.13 in front (when pyenv is there)."""
    import os

    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(str(v / "bin") for v in root.glob("3.1[1-3]*") if (v / "bin").is_dir())
    return os.pathsep.join([*found, os.environ.get("PATH", "")])


@nox.session
@lane(locks=[PYTHON_SDK_TREE])
def python_sdk_tox(session: nox.Session) -> None:
    """Runs tox: a missing interpreter fails the session (tox.ini never skips one)."""
    session.install("-r", str(SDK / "requirements-tox.txt"))
    work = Path(session.create_tmp()).resolve() / "tox"
    with session.chdir(SDK):
        # The three at once: their unit tests mostly wait on sidecar fakes and time-outs
        # (73 CPU-seconds in 161 s with two at a time, then the third alone).
        session.run(
            "tox", "-p", "3", "-e", TOX_ENVS, "--workdir", str(work), *session.posargs,
            # tox-uv (requirements-tox.txt) finds the interpreters on PATH; one that is missing
            # must fail, never be downloaded.
            env={"PATH": _pyenv_path(), "UV_PYTHON_DOWNLOADS": "never"},
        )


@nox.session
def python_sdk_examples(session: nox.Session) -> None:
    """Each example is a runnable program; they start the reference worker themselves."""
    _install(session, worker=True)
    session.run(
        "pytest", "-p", "no:cacheprovider", "-ra", "-q",
        str(SDK / "tests/test_examples.py"), str(SDK / "tests/test_readme.py"), "--rootdir", str(SDK),
        *session.posargs,
        env=REQUIRE_WORKER,
    )


@nox.session
def bench_python_sdk(session: nox.Session) -> None:
    """Prints the SDK's figures: watch throughput ratio, connect time, RSS growth."""
    _install(session, worker=True)
    # The SDK's own per-event work first, without the network (steady on a busy machine).
    session.run("python", str(SDK / "benchmarks/event_path.py"))
    session.run("python", str(SDK / "benchmarks/bench.py"), *session.posargs)
