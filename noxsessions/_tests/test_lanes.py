"""Tests of the lane runner behind a bare ./noxw (noxsessions/_lanes.py)."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from noxsessions import _lanes, _registry
from noxsessions._lane_facts import read_weights
from noxsessions._lanes import Outcome, Schedule, run_lanes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# The facts the sessions declare, as a bare ./noxw reads them.
FACTS = _lanes.lane_facts()


class Recorder:
    """A fake session runner that records every violation of the lane rules it sees."""

    def __init__(self, lanes: int, wait_for: dict[str, str] | None = None) -> None:
        self.lanes = lanes
        self.active: set[str] = set()
        self.started: dict[str, threading.Event] = {}
        self.wait_for = wait_for or {}
        self.violations: list[str] = []
        self.most_at_once = 0
        self.pairs: set[frozenset[str]] = set()  # sessions seen running at the same time
        self.lock = threading.Lock()

    def event(self, name: str) -> threading.Event:
        with self.lock:
            return self.started.setdefault(name, threading.Event())

    def __call__(self, name: str) -> Outcome:
        with self.lock:
            for other in self.active:
                shared = [lock for lock, holders in FACTS.locks.items() if {name, other} <= holders]
                if shared:
                    self.violations.append(f"{name} started while {other} held {shared}")
                self.pairs.add(frozenset({name, other}))
            self.active.add(name)
            self.most_at_once = max(self.most_at_once, len(self.active))
            used = sum(FACTS.size(n) for n in self.active)
            if len(self.active) > 1 and used > self.lanes:
                self.violations.append(f"{sorted(self.active)} take {used} lanes of {self.lanes}")
        self.event(name).set()
        if name in self.wait_for:
            # Gives a session that must not overlap this one every chance to start now.
            self.event(self.wait_for[name]).wait(timeout=0.5)
        with self.lock:
            self.active.discard(name)
        return Outcome(name, name != "bad", 0.0, Path(os.devnull))


def test_lock_mates_never_run_together_even_when_lanes_are_free() -> None:
    # typescript_lint waits for typescript_tests to start: only a broken lock lets it.
    recorder = Recorder(lanes=4, wait_for={"typescript_lint": "typescript_tests", "go_tests": "go_lint"})
    names = ["typescript_lint", "typescript_tests", "go_tests", "go_lint", "docs_check"]
    outcomes = run_lanes(names, 4, recorder, lambda _o: None, FACTS)
    assert recorder.violations == []
    assert [o.name for o in outcomes] == names  # reported in the given order, whatever finished first


def test_independent_sessions_do_run_at_once() -> None:
    # Each waits for the other to start; serial scheduling would leave both events unset.
    recorder = Recorder(lanes=2, wait_for={"docs_check": "worker_lint", "worker_lint": "docs_check"})
    run_lanes(["docs_check", "worker_lint"], 2, recorder, lambda _o: None, FACTS)
    assert recorder.most_at_once == 2
    assert recorder.violations == []


def test_conformance_admits_a_light_partner_within_its_lanes_and_every_session_runs_once() -> None:
    # Every partner waits for conformance to start, and conformance for docs_check: with
    # conformance alone on the machine (the old rule) the pair below would never be seen.
    names = ["conformance", "docs_check", "worker_lint", "compile_go", "go_lint", "python_sdk_lint"]
    wait_for = {n: "conformance" for n in names if n != "conformance"} | {"conformance": "docs_check"}
    recorder = Recorder(lanes=3, wait_for=wait_for)
    reported: list[str] = []
    outcomes = run_lanes(names, 3, recorder, lambda o: reported.append(o.name), FACTS)
    assert recorder.violations == []  # never more than one partner: conformance takes two lanes
    assert frozenset({"conformance", "docs_check"}) in recorder.pairs
    assert sorted(reported) == sorted(names)
    assert len(outcomes) == len(names)


def test_conformance_runs_beside_the_typescript_sessions_but_not_its_own_clients_builders() -> None:
    # dist/ and node_modules are built once under file locks (scripts/build.mjs, _npm_ci),
    # so conformance only waits for the other session that builds its clients.
    schedule = Schedule(["conformance"], FACTS, running={"typescript_tests", "go_tests"})
    assert schedule.can_start("conformance", 4)
    schedule = Schedule(["conformance"], FACTS, running={"typescript_conformance_runtimes"})
    assert not schedule.can_start("conformance", 4)
    schedule = Schedule(["typescript_examples"], FACTS, running={"typescript_tests"})
    assert not schedule.can_start("typescript_examples", 4)  # both compile into build/


def test_a_session_larger_than_the_lanes_still_runs_alone() -> None:
    recorder = Recorder(lanes=1, wait_for={"conformance": "docs_check"})
    run_lanes(["conformance", "docs_check"], 1, recorder, lambda _o: None, FACTS)
    assert recorder.most_at_once == 1
    assert recorder.violations == []


def test_one_lane_is_strictly_serial() -> None:
    names = ["docs_check", "worker_lint", "compile_python"]
    recorder = Recorder(lanes=1, wait_for={"docs_check": "worker_lint", "worker_lint": "compile_python"})
    run_lanes(names, 1, recorder, lambda _o: None, FACTS)
    assert recorder.most_at_once == 1


def test_schedule_rules() -> None:
    schedule = Schedule(["go_lint", "conformance", "docs_check", "worker_lint"], FACTS, running={"go_tests"})
    assert not schedule.can_start("go_lint", 3)  # shares go-module
    assert schedule.can_start("conformance", 3)  # two lanes free, no lock shared
    assert not schedule.can_start("conformance", 2)  # one lane free, it takes two
    assert schedule.next(3) == "conformance"
    assert schedule.next(3) is None  # three lanes in use: go_tests and conformance's two
    schedule.finished("go_tests")
    assert schedule.next(3) == "go_lint"  # go-module is free again, and one lane
    assert schedule.next(3) is None
    schedule = Schedule(["docs_check", "worker_lint"], FACTS, running={"conformance"})
    assert schedule.next(3) == "docs_check"
    assert schedule.next(3) is None
    schedule.finished("conformance")
    assert schedule.next(3) == "worker_lint"


def test_order_puts_long_sessions_first() -> None:
    order = Schedule.order(["go_lint", "python_sdk_tox", "docs_check", "conformance"], FACTS)
    assert order == ["conformance", "python_sdk_tox", "docs_check", "go_lint"]


def test_order_starts_a_chain_of_lock_mates_before_a_longer_single_session() -> None:
    # The four TypeScript build/ sessions run one after another: together they outweigh
    # docs_check and codegen_tests, though each of them alone is shorter.
    typescript = ["typescript_tests", "typescript_examples", "typescript_lint", "typescript_runtimes"]
    order = Schedule.order(["docs_check", "codegen_tests", *typescript], FACTS)
    assert order[:4] == sorted(typescript, key=lambda n: -FACTS.weights[n])
    assert order[4:] == ["codegen_tests", "docs_check"]


def test_every_weighed_session_exists() -> None:
    # A renamed session would silently lose its measured weight.
    assert set(read_weights()) - set(_registry.sessions()) == set()


def test_the_sessions_declare_the_locks_and_sizes_a_bare_run_relies_on() -> None:
    # Spot checks of declarations beside the sessions: one per lock, and the one size.
    assert {"rust_tests", "bridge_tests", "tauri_plugin_tests", "release_dry_run"} <= FACTS.locks["cargo-target"]
    assert {"typescript_tests", "typescript_lint"} <= FACTS.locks["typescript-tests-build"]
    assert FACTS.locks["conformance-clients"] == {"conformance", "typescript_conformance_runtimes"}
    assert FACTS.locks["go-module"] == {"compile_go", "go_lint", "go_tests"}
    assert {"python_sdk_tox", "release"} <= FACTS.locks["python-sdk-tree"]
    assert "server_conformance" in FACTS.locks["h2spec-binary"]
    assert dict(FACTS.sizes) == {"conformance": 2}


def test_the_lane_runner_finds_the_default_sessions_without_noxfile() -> None:
    # _lanes.py reads the areas through _registry, as noxfile.py does: the same list.
    code = (
        "import sys; from noxsessions import _lanes, _registry; "
        "_registry.default_sessions(); _lanes.lane_facts(); print('noxfile' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    assert _registry.default_sessions()[0] == "check_generated"
    assert _registry.default_sessions()[-1] == "conformance"


def test_failing_session_fails_the_run_and_its_whole_log_is_printed_again(tmp_path: Path) -> None:
    out = io.StringIO()
    nox = [sys.executable, str(HERE / "fake_nox.py")]
    runner = _lanes.NoxRunner(nox, ["--envdir", "somewhere"], ["-k", "x"], tmp_path)
    outcomes = run_lanes(["good", "bad"], 2, runner, lambda o: _lanes.print_log(o, out=out), FACTS)
    status = _lanes.summary(outcomes, 1.0, 2, out=out)
    text = out.getvalue()
    assert status == 1
    assert "fake nox ran bad with --envdir somewhere -s bad -- -k x" in text
    again = text.split("!!!!! bad FAILED: its full log again !!!!!", 1)[1]
    assert "fake nox ran bad" in again and "fake nox ran good" not in again
    assert "===== bad: FAILED" in text and "===== good: ok" in text
    table = text.split("\nsession ", 1)[1]
    assert table.index("good") < table.index("bad")  # the given order
    assert "1 failed: bad" in text


def test_all_passing_run_exits_zero(tmp_path: Path) -> None:
    out = io.StringIO()
    runner = _lanes.NoxRunner([sys.executable, str(HERE / "fake_nox.py")], [], [], tmp_path)
    outcomes = run_lanes(["good", "fine"], 2, runner, lambda o: _lanes.print_log(o, out=out), FACTS)
    assert _lanes.summary(outcomes, 1.0, 2, out=out) == 0
    assert "0 failed" in out.getvalue()


def test_split_arguments() -> None:
    lanes, sessions, options, posargs = _lanes.split_arguments(
        ["--lanes", "3", "--envdir", ".nox-x", "-s", "a", "b", "-db", "virtualenv", "--", "-s", "z"]
    )
    assert (lanes, sessions, options, posargs) == (3, ["a", "b"], ["--envdir", ".nox-x", "-db", "virtualenv"], ["-s", "z"])
    assert _lanes.split_arguments(["-ts"])[1:] == (None, ["-ts"], [])


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    """A copy of ./noxw whose nox and python only say how they were called."""
    shutil.copy2(ROOT / "noxw", tmp_path / "noxw")
    (tmp_path / "noxsessions").mkdir()
    pins = tmp_path / "noxsessions/requirements.txt"
    pins.write_text("nox\n")
    bin_dir = tmp_path / ".cache/noxw/bin"
    bin_dir.mkdir(parents=True)
    (tmp_path / ".cache/noxw/.pins-sha256").write_text(hashlib.sha256(pins.read_bytes()).hexdigest() + "\n")
    for tool in ("nox", "python"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho {tool} "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "lanes_env", "expected"),
    [
        ([], "2", "lanes"),
        ([], "1", "nox"),
        (["--lanes", "1"], "", "nox"),
        (["--lanes=1", "--envdir", "x"], "", "nox --envdir x"),
        (["-s", "docs_check"], "2", "nox -s docs_check"),
        (["--lanes", "2", "-s", "docs_check"], "", "lanes"),
        (["-l"], "2", "nox -l"),
        (["--envdir", ".nox-ci", "--", "--lanes", "1"], "2", "lanes"),
        (["--lanes", "1", "--", "--lanes", "1"], "", "nox -- --lanes 1"),
    ],
)
def test_noxw_routes_bare_runs_to_lanes(fake_root: Path, args: list[str], lanes_env: str, expected: str) -> None:
    env = {**os.environ, "NOXW_LANES": lanes_env}
    done = subprocess.run([str(fake_root / "noxw"), *args], env=env, capture_output=True, text=True, check=True)
    line = done.stdout.strip()
    if expected == "lanes":
        assert line.startswith(f"python {fake_root}/noxsessions/_lanes.py {fake_root}/.cache/noxw/bin/nox")
        assert line.endswith(" ".join(args)) or not args
    else:
        assert line == expected


def test_a_sessions_cpu_includes_its_children(tmp_path: Path) -> None:
    # The "session" spends its CPU in a child process it waits for, as nox's sessions do.
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}], check=True)"
    runner = _lanes.NoxRunner([sys.executable, "-c", child], [], [], tmp_path)
    outcome = runner("burner")
    assert outcome.ok
    assert outcome.cpu >= 0.3
    out = io.StringIO()
    _lanes.summary([outcome], 1.0, 1, out=out)
    assert "slowest: burner" in out.getvalue() and "s of CPU" in out.getvalue()
