"""S7 sidecar: no-shell spawn, bootstrap validation, bounded restarts, group kill."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

import colossus_agent_client as colossus
from colossus_agent_client._sidecar_bootstrap import parse_reply

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"


@pytest.fixture
def fake_exe(tmp_path: Path) -> Path:
    exe = tmp_path / "fake-sidecar"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]\n"
        "from fake_worker import _sidecar_main\n"
        "sys.exit(_sidecar_main(sys.argv[1:]))\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def opts(exe: Path, *extra: str, **kw: object) -> colossus.SidecarOptions:
    values: dict[str, object] = dict(
        executable=exe,
        application_id="my-app",
        extra_args=extra,
        startup_timeout=20.0,
        shutdown_grace=2.0,
        inherit_stderr=False,
        restart_backoff=colossus.RetryPolicy(
            max_attempts=4, initial_backoff=0.01, max_backoff=0.02
        ),
        retry=colossus.RetryPolicy(max_attempts=6, initial_backoff=0.2, max_backoff=0.5),
    )
    values.update(kw)
    return colossus.SidecarOptions(**values)  # type: ignore[arg-type]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_quick_start_and_group_kill(fake_exe: Path, tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    client = colossus.Client.start_sidecar(opts(fake_exe, f"--marker={marker}"))
    try:
        assert client.server_info.deployment_mode is colossus.DeploymentMode.SIDECAR
        events = list(client.runs.watch("run_1"))
        assert [e.sequence for e in events] == [1, 2]
        grandchild = int(marker.read_text())
        assert _alive(grandchild)
    finally:
        client.close()
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("bad-pin", colossus.PinMismatchError),
        ("extra-member", colossus.SidecarError),
        ("error", colossus.SidecarError),
        ("bad-bearer", colossus.SidecarError),
    ],
)
def test_bootstrap_reply_is_validated(fake_exe: Path, mode: str, error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        colossus.Client.start_sidecar(opts(fake_exe, f"--fake={mode}"))
    if mode == "error":
        assert info.value.metadata["code"] == "state_dir_invalid"  # type: ignore[attr-defined]


def test_unexpected_exit_is_restarted_and_reads_resume(fake_exe: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with colossus.Client.start_sidecar(
        opts(fake_exe, "--fake=crash-once", state_dir=state)
    ) as client:
        time.sleep(0.8)  # the worker exits after 0.3 s
        run = client.runs.get("run_1")  # a read: retried after the restart
        assert run.status is colossus.RunStatus.SUCCEEDED


def test_a_read_that_meets_the_crash_is_retried_on_the_replacement(
    fake_exe: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with colossus.Client.start_sidecar(
        opts(fake_exe, "--fake=crash-on-read", state_dir=state)
    ) as client:
        assert client.runs.get("run_1").status is colossus.RunStatus.SUCCEEDED
    calls = (state / "calls.log").read_text().split()
    assert calls.count("GetRun") == 2  # the one the first worker died on, then its retry
    assert calls.count("GetServerInfo") == 2  # each worker was verified before use


# The connect timeout of the tests below: a connect that waited it out on the dead worker
# (as its GetServerInfo did while it waited for a ready channel) would fail them.
SLOW_CONNECT = 20.0
AT_ONCE = 8.0


def test_a_worker_that_dies_while_the_client_connects_is_replaced(
    fake_exe: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    options = opts(
        fake_exe, "--fake=crash-on-connect", state_dir=state, connect_timeout=SLOW_CONNECT
    )
    started = time.monotonic()
    with colossus.Client.start_sidecar(options) as client:
        # S1: the connect ended when the worker exited, not at its deadline.
        assert time.monotonic() - started < AT_ONCE
        assert client.runs.get("run_1").run_id == "run_1"
    assert (state / "calls.log").read_text().split() == ["GetServerInfo", "GetServerInfo", "GetRun"]


async def test_an_async_client_replaces_a_worker_that_dies_while_it_connects(
    fake_exe: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    options = opts(
        fake_exe, "--fake=crash-on-connect", state_dir=state, connect_timeout=SLOW_CONNECT
    )
    started = time.monotonic()
    async with await colossus.AsyncClient.start_sidecar(options) as client:
        assert time.monotonic() - started < AT_ONCE
        assert (await client.runs.get("run_1")).run_id == "run_1"
    assert (state / "calls.log").read_text().split() == ["GetServerInfo", "GetServerInfo", "GetRun"]


def test_a_worker_that_keeps_dying_while_the_client_connects_spends_the_budget(
    fake_exe: Path,
) -> None:
    options = opts(
        fake_exe, "--fake=crash-always-on-connect", max_restarts=1, connect_timeout=SLOW_CONNECT
    )
    started = time.monotonic()
    with pytest.raises(colossus.SidecarError) as info:
        colossus.Client.start_sidecar(options)
    assert info.value.reason == "SIDECAR_RESTARTS_EXHAUSTED"
    assert time.monotonic() - started < AT_ONCE


def test_restarts_are_bounded(fake_exe: Path) -> None:
    client = colossus.Client.start_sidecar(opts(fake_exe, "--fake=crash-always", max_restarts=1))
    try:
        with pytest.raises(colossus.SidecarError) as info:
            client.runs.get("run_1")  # dies, is retried on the one replacement, which dies too
        assert info.value.reason == "SIDECAR_RESTARTS_EXHAUSTED"
    finally:
        client.close()


def test_every_call_after_giving_up_raises_the_same_sidecar_error(fake_exe: Path) -> None:
    client = colossus.Client.start_sidecar(opts(fake_exe, "--fake=crash-always", max_restarts=1))
    reasons: list[str | None] = []
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(reasons) < 3:
            try:
                client.runs.get("run_1")
            except colossus.SidecarError as exc:
                reasons.append(exc.reason)
            except colossus.TransportError:
                pass  # the call that met the dying worker; the next one restarts it
    finally:
        client.close()
    assert reasons == ["SIDECAR_RESTARTS_EXHAUSTED"] * 3


def test_mutations_are_not_replayed_across_a_restart(fake_exe: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with colossus.Client.start_sidecar(
        opts(fake_exe, "--fake=crash-on-cancel", state_dir=state)
    ) as client:
        with pytest.raises(colossus.OutcomeUnknownError):
            client.runs.cancel("run_1")  # the worker dies while handling it
        time.sleep(0.3)
        assert client.runs.get("run_1").run_id == "run_1"  # a read after the restart
    calls = (state / "calls.log").read_text().split()
    assert calls.count("CancelRun") == 1


def test_state_dir_must_be_private(fake_exe: Path, tmp_path: Path) -> None:
    state = tmp_path / "open"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)
    with pytest.raises(colossus.SidecarError):
        colossus.Client.start_sidecar(opts(fake_exe, state_dir=state))


@pytest.mark.parametrize("program", ["colossus-no-such-worker-program", "/nonexistent/worker"])
def test_a_missing_worker_program_is_named_with_the_fix(program: str) -> None:
    # The same reason in every SDK (docs/requirements.md, S9), on PATH or by path.
    with pytest.raises(colossus.SidecarError) as caught:
        colossus.Client.start_sidecar(opts(Path(program), max_restarts=0))
    assert caught.value.reason == colossus.LocalReason.SIDECAR_PROGRAM_NOT_FOUND
    assert caught.value.metadata["program"] == program
    assert program in caught.value.message
    # What works: the worker is the colossus-conformance distribution in ./conformance.
    assert "pip install ./conformance" in caught.value.message
    assert "executable" in caught.value.message


def test_reply_parser_rejects_bad_members() -> None:
    with pytest.raises(colossus.SidecarError):
        parse_reply(b'{"version": 2}')
    with pytest.raises(colossus.SidecarError):
        parse_reply(b'{"version": 1, "error": "x"}')
    with pytest.raises(colossus.SidecarError):
        parse_reply(b"[]")


async def test_async_sidecar(fake_exe: Path) -> None:
    client = await colossus.AsyncClient.start_sidecar(opts(fake_exe))
    async with client:
        assert client.server_info.deployment_mode is colossus.DeploymentMode.SIDECAR
        got = [e.sequence async for e in client.runs.watch("run_1")]
        assert got == [1, 2]


def test_spawn_from_a_process_whose_low_descriptors_are_free(fake_exe: Path) -> None:
    # In a fresh interpreter fds 3 and 4 are unused, so /dev/null may land there; the
    # worker's stderr must still not end up on the bootstrap pipe.
    code = (
        "import sys\nimport colossus_agent_client as colossus\n"
        f"o = colossus.SidecarOptions(executable={str(fake_exe)!r}, application_id='a')\n"
        "with colossus.Client.start_sidecar(o) as c:\n"
        "    print(c.server_info.deployment_mode.name)\n"
    )
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "SIDECAR"
