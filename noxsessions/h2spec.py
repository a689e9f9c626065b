"""The reference worker's HTTP/2 judged by a suite nobody here wrote (issue 28, W1).

    h2spec   builds h2spec at the version conformance/tools/h2spec/go.mod pins (once, into
             <cache>/h2spec/<digest of go.mod and go.sum>/), starts a reference worker on a
             fresh temporary folder, runs `h2spec -t -k` (TLS, the worker's own leaf not
             verified) against it and fails unless every test passes, naming each test that
             failed or was skipped

h2spec skips a test only when the server's answer to `GET /` carries too little body
(fewer than 1 or 5 bytes of DATA) or the server sets no SETTINGS_MAX_CONCURRENT_STREAMS;
the worker answers it with a 405 and a short text body and advertises 128 streams, so a skip means one of
those broke and counts as a failure here. Arguments after `--` go to h2spec (`-- -S` adds
its strict tests, `-- http2/6.5` runs one section).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import nox

from noxsessions._cache import cache_dir
from noxsessions._lane_facts import H2SPEC_BINARY, lane
from noxsessions._wheels import install_local

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "conformance/tools/h2spec"
PACKAGE = "github.com/summerwind/h2spec/cmd/h2spec"
START_SECONDS = 30
RUN_SECONDS = 120

DEFAULT_SESSIONS = ["h2spec"]


def _h2spec_binary(session: nox.Session) -> Path:
    """The pinned h2spec, built on first use; the cache folder is named by the pin's digest."""
    digest = hashlib.sha256((TOOL / "go.mod").read_bytes() + (TOOL / "go.sum").read_bytes())
    binary = cache_dir("h2spec") / digest.hexdigest()[:16] / "h2spec"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        partial = binary.with_name("h2spec.partial")
        with session.chdir(TOOL):
            session.run("go", "build", "-o", str(partial), PACKAGE, external=True,
                        env={"GOFLAGS": "-mod=readonly"})
        partial.replace(binary)
    return binary


def _endpoint(public: Path, worker: subprocess.Popen[bytes], log: Path) -> tuple[str, int]:
    """Wait for the worker's endpoint.json; returns (host, port)."""
    deadline = time.monotonic() + START_SECONDS
    descriptor = public / "endpoint.json"
    while not descriptor.exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)
    url = json.loads(descriptor.read_text())["endpoint"]
    host, port = url.removeprefix("https://").rsplit(":", 1)
    return host.strip("[]"), int(port)


def _verdicts(report: Path) -> tuple[int, list[str], list[str]]:
    """(tests run, names of the failed ones, names of the skipped ones) from h2spec's JUnit file."""
    # h2spec writes a failure's text unescaped (a PING's raw payload among it), so the text
    # is dropped before parsing; the test's name is in a (properly escaped) attribute.
    text = re.sub(r"<(failure|error)>.*?</\1>", r"<\1/>", report.read_text(errors="replace"),
                  flags=re.S)
    run, failed, skipped = 0, [], []
    for case in ET.fromstring(text).iter("testcase"):
        run += 1
        name = f"{case.get('package')}: {case.get('classname')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        elif case.find("skipped") is not None:
            skipped.append(name)
    return run, failed, skipped


@nox.session
@lane(locks=[H2SPEC_BINARY])
def h2spec(session: nox.Session) -> None:
    """Every h2spec test against a fresh reference worker; any failure or skip fails."""
    binary = _h2spec_binary(session)
    install_local(session, "conformance")
    worker_bin = Path(session.bin) / "colossus-reference-worker"
    with tempfile.TemporaryDirectory(prefix="colossus-h2spec-") as scratch:
        public = Path(scratch) / "public"
        public.mkdir(mode=0o700)
        log = Path(scratch) / "worker.log"
        report = Path(scratch) / "h2spec.xml"
        with log.open("wb") as log_file:
            worker = subprocess.Popen(
                [str(worker_bin), "serve", "--public-api-dir", str(public), "--port", "0"],
                stdout=log_file, stderr=subprocess.STDOUT)
        try:
            host, port = _endpoint(public, worker, log)
            session.log(f"worker serving on {host}:{port}")
            started = time.monotonic()
            # h2spec's own exit status is ignored: the JUnit report names every outcome.
            session.run(str(binary), "-h", host, "-p", str(port), "-t", "-k", "-j", str(report),
                        *session.posargs, external=True, success_codes=[0, 1],
                        env={"NO_COLOR": "1"})
            seconds = time.monotonic() - started
            if worker.poll() is not None:
                session.error(f"the worker exited during h2spec:\n{log.read_text(errors='replace')}")
        finally:
            worker.terminate()
            try:
                worker.wait(15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        if not report.exists():
            session.error("h2spec wrote no report")
        run, failed, skipped = _verdicts(report)
    session.log(f"h2spec: {run} tests, {run - len(failed) - len(skipped)} passed, "
                f"{len(skipped)} skipped, {len(failed)} failed in {seconds:.1f} s")
    problems = [f"failed: {name}" for name in failed] + [f"skipped: {name}" for name in skipped]
    if not run or problems:
        session.error("h2spec did not pass every test:\n  " + "\n  ".join(problems or ["no test ran"]))
