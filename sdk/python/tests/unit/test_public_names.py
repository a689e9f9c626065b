"""Public classes show the module users import, and enum-typed arguments take their names
under ``mypy --strict`` as they do at run time (S8, issue 26)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import colossus_agent_client as sdk
from colossus_agent_client import testing


def test_every_public_class_names_the_public_module() -> None:
    private = [
        name
        for name in sdk.__all__
        if isinstance(getattr(sdk, name), type)
        and getattr(sdk, name).__module__ != "colossus_agent_client"
    ]
    assert private == []
    assert testing.FakeWorker.__module__ == "colossus_agent_client.testing"


def test_reprs_and_tracebacks_show_the_public_path() -> None:
    error = sdk.NotFoundError("no such run")
    assert f"{type(error).__module__}.{type(error).__qualname__}" == (
        "colossus_agent_client.NotFoundError"
    )
    assert repr(sdk.RunStatus.SUCCEEDED) == "<RunStatus.SUCCEEDED: 5>"
    # Pickling looks classes up by module and name: the public path must resolve.
    assert pickle.loads(pickle.dumps(sdk.RunStatus.SUCCEEDED)) is sdk.RunStatus.SUCCEEDED  # noqa: S301
    answer = sdk.ApprovalAnswer("b", "APPROVE")
    assert pickle.loads(pickle.dumps(answer)) == answer  # noqa: S301


def test_enum_arguments_take_their_names_at_run_time() -> None:
    assert sdk.ApprovalAnswer("b", "APPROVE").decision is sdk.ApprovalDecision.APPROVE
    assert sdk.ApprovalAnswer("b", "deny").decision is sdk.ApprovalDecision.DENY
    assert sdk.PlanAction("run_1", 2, "EXECUTE_GOAL").kind is sdk.PlanActionKind.EXECUTE_GOAL
    assert sdk.ResearchOptions(2, ["web"]).lanes == (sdk.EvidenceLane.WEB,)


def test_enum_arguments_take_their_names_under_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    program = tmp_path / "uses_names.py"
    program.write_text(
        textwrap.dedent(
            """
            from colossus_agent_client import ApprovalAnswer, PlanAction, ResearchOptions

            ApprovalAnswer("binding", "APPROVE")
            ApprovalAnswer("binding", "deny")
            PlanAction("run_1", 2, "EXECUTE_GOAL")
            ResearchOptions(2, ["web", "REPOSITORY"])
            """
        )
    )
    src = Path(sdk.__file__).resolve().parent.parent
    # An installed copy is found through the environment (it is typed); running mypy from
    # site-packages would make every installed module a source that shadows its stubs.
    cwd = tmp_path if src.name in {"site-packages", "dist-packages"} else src
    result = subprocess.run(
        # Only the program is judged (silent: the SDK's own imports are checked elsewhere);
        # run from the folder holding the package under test, so that copy is the one seen.
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--follow-imports=silent",
            str(program),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stdout + result.stderr
