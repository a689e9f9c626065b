"""Sessions for the code-generation spine: the contract in api/ and the bindings
generated from it (see sdk/scripts/README.md).

    generate            regenerate every binding (./sdk/scripts/generate)
    check_generated     lint, format and breaking checks plus stale-file check
    compile_python      import every generated module; mypy --strict over the stubs
    compile_typescript  tsc --noEmit (strict) over sdk/typescript/src/gen
    compile_go          go build + go vet in sdk/go
    codegen_tests       pytest sdk/scripts/tests (each test works in a copy of the repo)
    bench_codegen       warm timings of generate and check-generated, sizes of the trees
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nox

from noxsessions._lane_facts import GO_MODULE, lane

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "noxsessions" / "requirements-codegen.txt"
GENERATED_DIRS = {
    "python": "sdk/python/src/colossus_agent_client/api",
    "typescript": "sdk/typescript/src/gen",
    "go": "sdk/go/gen",
    "worker": "conformance/src/colossus_reference_worker/_gen",
    "rust": "crates/colossus-sdk/src/gen",
}

DEFAULT_SESSIONS = [
    "check_generated",
    "compile_python",
    "compile_typescript",
    "compile_go",
    "codegen_tests",
]

# Imports each generated module by name, so a broken import inside any of them fails.
# The hand-written parent packages (colossus_agent_client, colossus_reference_worker)
# are stood in for by bare package objects: generated code must not depend on the layer
# above it, and their own dependencies are other sessions' business. Both import roots load in one
# interpreter, which also proves the two Python bindings do not clash.
IMPORT_ALL = """
import importlib, pathlib, sys, types
count = 0
for root, package in ((sys.argv[1], "colossus_agent_client.api"),
                      (sys.argv[2], "colossus_reference_worker._gen")):
    base = pathlib.Path(root)
    parent = package.split(".")[0]
    stand_in = types.ModuleType(parent)
    stand_in.__path__ = [str(base / parent)]
    sys.modules[parent] = stand_in
    for path in sorted((base / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        importlib.import_module(name)
        count += 1
print(f"imported {count} generated modules")
"""


@nox.session(venv_backend="none")
def generate(session: nox.Session) -> None:
    """Regenerate every binding from api/."""
    session.run("./sdk/scripts/generate", external=True)


@nox.session(venv_backend="none")
def check_generated(session: nox.Session) -> None:
    """Fail if the contract or any generated file is not as it should be.

    Extra arguments go to the script, e.g. `-- --against origin/main`.
    """
    session.run("./sdk/scripts/check-generated", *session.posargs, external=True)


@nox.session
def compile_python(session: nox.Session) -> None:
    """Import every generated Python module and type-check the SDK bindings strictly."""
    session.install("-r", str(REQUIREMENTS))
    sdk_src = ROOT / "sdk/python/src"
    worker_src = ROOT / "conformance/src"
    env = {"PYTHONPATH": f"{sdk_src}{os.pathsep}{worker_src}", "PYTHONDONTWRITEBYTECODE": "1"}
    session.run("python", "-c", IMPORT_ALL, str(sdk_src), str(worker_src), env=env)
    # Errors in hand-written modules that the bindings import (such as the package
    # __init__) belong to other sessions; only the generated files are judged here.
    cache = str(ROOT / ".cache/mypy-codegen")
    mypy = ["mypy", "--strict", "--follow-imports=silent", "--cache-dir", cache]
    session.chdir(sdk_src)
    session.run(*mypy, "-p", "colossus_agent_client.api")
    session.chdir(worker_src)
    worker_files = sorted(
        str(p.relative_to(worker_src)) for p in (ROOT / GENERATED_DIRS["worker"]).rglob("*.py")
    )
    session.run(*mypy, *worker_files)


@nox.session(venv_backend="none")
def compile_typescript(session: nox.Session) -> None:
    """Type-check the generated TypeScript with the package's strict settings."""
    from noxsessions.typescript_sdk import _npm_ci  # one lock marker for every npm ci

    session.chdir(ROOT / "sdk/typescript")
    _npm_ci(session)  # skipped when node_modules was installed from this very lock
    session.run("npx", "--no-install", "tsc", "-p", "tsconfig.gen.json", external=True)


@nox.session(venv_backend="none")
@lane(locks=[GO_MODULE])
def compile_go(session: nox.Session) -> None:
    """Build and vet the Go module that holds the generated code."""
    session.chdir(ROOT / "sdk/go")
    env = {"GOFLAGS": "-mod=readonly"}
    session.run("go", "build", "./...", external=True, env=env)
    session.run("go", "vet", "./...", external=True, env=env)


@nox.session
def codegen_tests(session: nox.Session) -> None:
    """Tests of the generate and check-generated scripts, each in a copy of the repo."""
    session.install("-r", str(REQUIREMENTS))
    # Install the pinned tools once, up front, into the cache every copy shares (the copies
    # hold the same pins, so sdk/scripts/codegen/lib.sh finds the same folder outside them).
    session.run("bash", "-c", 'source sdk/scripts/codegen/lib.sh && ensure_tools', external=True)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        str(ROOT / "sdk/scripts/tests"),
        *session.posargs,
    )


@nox.session(venv_backend="none")
def bench_codegen(session: nox.Session) -> None:
    """Print median warm wall time of generate and check-generated, and tree sizes.

    Runs in a temporary copy of the repository so the working tree is never touched.
    Pass the number of runs as an argument: `./noxw -s bench_codegen -- 7` (default 5).
    """
    runs = int(session.posargs[0]) if session.posargs else 5
    env = dict(os.environ)
    sys.path.insert(0, str(ROOT / "sdk/scripts/codegen"))
    from repo_copy import copy_repo

    with tempfile.TemporaryDirectory(prefix="colossus-bench-") as tmp:
        copy = copy_repo(Path(tmp) / "repo")

        def timed(script: str) -> list[float]:
            subprocess.run([script], cwd=copy, env=env, check=True, capture_output=True)
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                subprocess.run([script], cwd=copy, env=env, check=True, capture_output=True)
                times.append(time.perf_counter() - start)
            return times

        for script in ("./sdk/scripts/generate", "./sdk/scripts/check-generated"):
            times = timed(script)
            session.log(
                f"{script}: median {statistics.median(times):.2f}s over {runs} warm runs "
                f"(min {min(times):.2f}s, max {max(times):.2f}s)"
            )
        for language, folder in GENERATED_DIRS.items():
            files = [p for p in (copy / folder).rglob("*") if p.is_file()]
            size = sum(p.stat().st_size for p in files)
            session.log(f"{language:<10} {folder}: {len(files)} files, {size} bytes")
