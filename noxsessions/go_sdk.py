"""Sessions for the Go SDK (sdk/go) and its conformance client (conformance/clients/go).

    go_lint       gofmt, go vet and staticcheck (pinned by the module's `tool` line) over the
                  SDK, its examples and the conformance client
    go_tests      go test -race (unit tests on an in-process fake worker, integration tests
                  and example programs against the reference worker installed from
                  ./conformance, Example functions), then a bounded fuzz run per parser
    bench_go_sdk  watch throughput and connect time as ratios over a raw grpc-go stub,
                  allocations per event and heap growth (not in the default run)

Arguments after `--` go to `go test` (go_tests) or to the benchmark program.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nox

from noxsessions._lane_facts import GO_MODULE, lane
from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk/go"
CLIENT = ROOT / "conformance/clients/go"

DEFAULT_SESSIONS = ["go_lint", "go_tests"]

# Every go command runs against the committed go.mod/go.sum only.
GO_ENV = {"GOFLAGS": "-mod=readonly"}
FUZZ_TARGETS = ["FuzzParseDescriptor", "FuzzParseEndpoint", "FuzzParseCertificate", "FuzzParseBootstrapReply"]
# A count, not a duration: Go 1.26's coordinator can report a bare "context deadline
# exceeded" failure when a duration runs out while a worker is mid-call on a loaded machine
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race. About 3 s each idle.
FUZZ_BUDGET = os.environ.get("COLOSSUS_GO_FUZZTIME", "6000x")


def _worker(session: nox.Session) -> str:
    """Installs the reference worker into the session and returns its executable."""
    install_local(session, "conformance")
    worker = Path(session.bin) / "colossus-reference-worker"
    if not worker.exists():
        session.error(f"the reference worker was not installed at {worker}")
    return str(worker)


@nox.session(venv_backend="none")
@lane(locks=[GO_MODULE])
def go_lint(session: nox.Session) -> None:
    """gofmt (no diff), go vet and staticcheck; the generated gen/ tree is left to codegen."""
    for folder in (SDK, CLIENT):
        with session.chdir(folder):
            files = subprocess.run(["gofmt", "-l", "."], capture_output=True, text=True, check=True).stdout.split()
            files = [f for f in files if not f.startswith("gen/")]
            if files:
                session.error("gofmt would change: " + ", ".join(files))
            session.run("go", "vet", "./...", external=True, env=GO_ENV)
    # staticcheck at the version the SDK's go.mod pins, built once and run on both modules.
    tools = ROOT / ".cache" / "go-tools"
    tools.mkdir(parents=True, exist_ok=True)
    staticcheck = str(tools / "staticcheck")
    with session.chdir(SDK):
        session.run("go", "build", "-o", staticcheck, "honnef.co/go/tools/cmd/staticcheck", external=True, env=GO_ENV)
    for folder in (SDK, CLIENT):
        with session.chdir(folder):
            session.run(staticcheck, "./...", external=True, env=GO_ENV)
    session.run("go", "-C", str(SDK), "test", "-run", "^TestEveryExportedNameIsDocumented$", ".", external=True, env=GO_ENV)


@nox.session
@lane(locks=[GO_MODULE])
def go_tests(session: nox.Session) -> None:
    """Race-enabled tests (a missing worker fails), then a few seconds of fuzzing per parser."""
    env = {**GO_ENV, "COLOSSUS_REFERENCE_WORKER": _worker(session), "COLOSSUS_REQUIRE_WORKER": "1"}
    with session.chdir(SDK):
        session.run("go", "test", "-race", "-count=1", *(session.posargs or ["./..."]), external=True, env=env)
        if not session.posargs:
            for target in FUZZ_TARGETS:
                session.run(
                    "go", "test", "-run", "^$", "-fuzz", f"^{target}$", "-fuzztime", FUZZ_BUDGET,
                    "-parallel", "2", ".", external=True, env=env,
                )


@nox.session
def bench_go_sdk(session: nox.Session) -> None:
    """Prints the Go SDK's figures as ratios measured in one run (see sdk/go/README.md)."""
    env = {**GO_ENV, "COLOSSUS_REFERENCE_WORKER": _worker(session)}
    with session.chdir(SDK):
        session.run("go", "run", "./internal/bench", *session.posargs, external=True, env=env)
