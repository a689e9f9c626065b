"""Every Python block of README.md, and the Python snippet `colossus-reference-worker dev`
prints, runs as a user would paste it, so neither can rot.

Each ```python block of the README is preceded by a marker that says how it runs:

    <!-- readme-test: run -->      a program on its own (the worker on PATH)
    <!-- readme-test: daemon -->   a program for a running worker: the values a user copies
                                   from enrolment ("wkr_...", "8cf2...7e3c") are filled in,
                                   HOME holds ~/colossus and the bearer is piped to stdin
    <!-- readme-test: daemon, continues the block above -->   appended to the block above
    <!-- readme-test: pytest -->   one file, named by its first line (`# NAME.py`); the
                                   pytest blocks in a row are one folder, run with pytest

A block without a marker fails the test. The worker is `dev` on ~/colossus, as a newcomer
would start it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "integration"))
from worker import find_worker

README = Path(__file__).resolve().parents[1] / "README.md"
EXECUTABLE = find_worker()
pytestmark = pytest.mark.skipif(
    EXECUTABLE is None,
    reason="reference worker not found: pip install ./conformance or set COLOSSUS_REFERENCE_WORKER",
)

BLOCK = re.compile(r"(?:<!-- readme-test: (?P<how>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)
# What a user copies from enrolment into the daemon example.
INSTANCE_PLACEHOLDER = '"wkr_..."'
PIN_PLACEHOLDER = '"8cf2...7e3c"'


@dataclass(frozen=True)
class Block:
    line: int
    how: str
    code: str


def readme_blocks() -> list[Block]:
    text = README.read_text()
    return [
        Block(
            text.count("\n", 0, m.start("code")) + 1,
            (m.group("how") or "").strip(),
            m.group("code"),
        )
        for m in BLOCK.finditer(text)
    ]


@dataclass(frozen=True)
class Dev:
    home: Path
    banner: str
    facts: dict[str, str]
    bearer: str


def _field(banner: str, name: str) -> str:
    for line in banner.splitlines():
        if line.strip().startswith(name):
            return line.strip()[len(name) :].strip()
    raise AssertionError(f"{name!r} is not in dev's banner:\n{banner}")


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    """`colossus-reference-worker dev --public-api-dir ~/colossus`, with a private HOME."""
    assert EXECUTABLE is not None
    home = tmp_path_factory.mktemp("home")
    home.chmod(0o700)
    proc = subprocess.Popen(
        [EXECUTABLE, "dev", "--public-api-dir", str(home / "colossus")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "HOME": str(home)},
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Stop with Ctrl-C"):
            break
    banner = "".join(lines)
    try:
        assert proc.poll() is None, proc.communicate(timeout=10)[1]
        path = Path(home / "colossus" / "dev-app.bearer")
        facts = {
            "instance_id": _field(banner, "instance ID"),
            "certificate_sha256": _field(banner, "certificate SHA-256"),
        }
        yield Dev(home, banner, facts, path.read_text().strip())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


def _run(
    code: str | None,
    cwd: Path,
    *,
    home: Path | None = None,
    stdin: str | None = None,
    argv: tuple[str, ...] = (),
) -> str:
    """Runs ``code`` as app.py (or ``python ARGV``) in a fresh process; returns its stdout."""
    if code is not None:
        (cwd / "app.py").write_text(code)
    assert EXECUTABLE is not None
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(EXECUTABLE).parent), os.environ["PATH"]]),
    }
    if home is not None:
        env["HOME"] = str(home)
    result = subprocess.run(
        [sys.executable, *(argv or ("app.py",))],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, (
        f"{code}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr[-3000:]}"
    )
    return result.stdout


def test_every_python_block_says_how_it_runs() -> None:
    blocks = readme_blocks()
    assert blocks, "no python blocks found in README.md"
    known = {"run", "daemon", "daemon, continues the block above", "pytest"}
    for block in blocks:
        assert block.how in known, (
            f"README.md line {block.line}: marker {block.how!r} not in {known}"
        )


@pytest.mark.parametrize(
    "block", [b for b in readme_blocks() if b.how == "run"], ids=lambda b: f"line{b.line}"
)
def test_a_standalone_block_runs(block: Block, tmp_path: Path) -> None:
    out = _run(block.code, tmp_path)
    assert out.strip(), "the block printed nothing"


def test_the_daemon_blocks_run_against_dev(dev: Dev, tmp_path: Path) -> None:
    program = ""
    ran = 0
    for block in readme_blocks():
        if block.how == "daemon":
            assert INSTANCE_PLACEHOLDER in block.code and PIN_PLACEHOLDER in block.code, block.line
            program = block.code.replace(INSTANCE_PLACEHOLDER, json.dumps(dev.facts["instance_id"]))
            program = program.replace(PIN_PLACEHOLDER, json.dumps(dev.facts["certificate_sha256"]))
        elif block.how == "daemon, continues the block above":
            assert program, f"README.md line {block.line} continues no daemon block"
            program += "\n" + block.code
        else:
            continue
        out = _run(program, tmp_path, home=dev.home, stdin=dev.bearer + "\n")
        assert dev.bearer not in out
        ran += 1
    assert ran >= 2
    assert "RunTerminated" in out  # the async block watched its run to the end


def pytest_projects() -> list[list[Block]]:
    """The pytest blocks, each run of them in a row (no other block between) one folder."""
    projects: list[list[Block]] = []
    previous = ""
    for block in readme_blocks():
        if block.how == "pytest":
            if previous != "pytest":
                projects.append([])
            projects[-1].append(block)
        previous = block.how
    return projects


FILE_LINE = re.compile(r"^# (\w+\.py)\b.*\n", re.M)


@pytest.mark.parametrize("project", pytest_projects(), ids=lambda p: f"line{p[0].line}")
def test_a_pytest_project_passes(project: list[Block], tmp_path: Path) -> None:
    files: dict[str, str] = {}
    for block in project:
        first = FILE_LINE.match(block.code)
        assert first, f"README.md line {block.line}: a pytest block starts with `# NAME.py`"
        # One file per block, so each block is pasted whole into one file.
        assert not FILE_LINE.search(block.code, first.end()), f"line {block.line}: two files"
        assert first.group(1) not in files, f"line {block.line}: {first.group(1)} twice"
        files[first.group(1)] = block.code
    assert any(name.startswith("test_") for name in files), files.keys()
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    out = _run(
        None,
        tmp_path,
        argv=(
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *(n for n in files if n.startswith("test_")),
        ),
    )
    assert " passed" in out and "failed" not in out


def test_the_python_snippet_dev_prints_runs_as_pasted(dev: Dev, tmp_path: Path) -> None:
    snippet = dev.banner.split("--- Python", 1)[1].split("---\n", 1)[1].split("\n--- ", 1)[0]
    out = _run(snippet, tmp_path)
    assert out.splitlines()[-1].endswith(" RunTerminated"), out
    assert dev.bearer not in out
