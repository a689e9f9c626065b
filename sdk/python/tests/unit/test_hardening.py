"""Findings of the adversarial review, each pinned by a test."""

from __future__ import annotations

import os
import sys
import threading
import traceback
from pathlib import Path

import pytest

import colossus_agent_client as colossus
from colossus_agent_client._options import RetryPolicy
from colossus_agent_client._watch_core import REPLAY_WINDOW_BYTES, WatchCore
from conftest import daemon_options
from fake_worker import BEARER, FakeWorker


def test_a_fifo_in_place_of_the_descriptor_fails_instead_of_blocking(
    fake: FakeWorker, api_dir: Path
) -> None:
    (api_dir / "endpoint.json").unlink()
    os.mkfifo(api_dir / "endpoint.json", 0o600)
    outcome: list[BaseException] = []

    def connect() -> None:
        try:
            colossus.Client.connect(daemon_options(fake, api_dir)).close()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(60)  # a guard against a hang, not a speed assertion
    assert not thread.is_alive(), "connect blocked on the FIFO"
    assert isinstance(outcome[0], colossus.DescriptorError)
    assert "not a regular file" in str(outcome[0])


def test_a_traceback_with_locals_never_shows_the_bearer(fake: FakeWorker, api_dir: Path) -> None:
    fake.b.server_info["instance_id"] = "someone_else"  # fails after the bearer was loaded
    with pytest.raises(colossus.IncompatibleServerError) as info:
        colossus.Client.connect(daemon_options(fake, api_dir))
    text = "".join(
        traceback.TracebackException.from_exception(info.value, capture_locals=True).format()
    )
    assert "Bearer" not in text or BEARER not in text
    assert BEARER not in text
    assert "expected 'inst_fake_1', got 'someone_else'" in str(info.value)


def test_session_metadata_reprs_are_redacted(client: colossus.Client) -> None:
    conn = client._backend.connection()  # type: ignore[union-attr]
    metadata = conn.metadata()
    assert BEARER not in repr(metadata) and BEARER not in repr(vars(conn))
    assert BEARER not in repr(metadata[0]) and BEARER not in str(list(metadata))
    assert metadata[0][1] == f"Bearer {BEARER}"  # what grpcio receives is intact


def test_missing_keyring_package_gives_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)
    provider = colossus.KeyringCredentialProvider("svc", "app")
    with pytest.raises(colossus.CredentialError, match="bearer-fd") as info:
        provider.load_bearer()
    assert info.value.reason == "KEYRING_UNAVAILABLE"


def test_no_keyring_backend_gives_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring
    import keyring.errors

    def no_backend(service: str, username: str) -> str:
        raise keyring.errors.NoKeyringError("No recommended backend was available.")

    monkeypatch.setattr(keyring, "get_password", no_backend)
    with pytest.raises(colossus.CredentialError, match="InMemoryCredentialProvider"):
        colossus.KeyringCredentialProvider("svc", "app").load_bearer()


def test_importing_the_sdk_loads_neither_keyring_nor_cryptography() -> None:
    import subprocess

    probe = (
        "import sys, colossus_agent_client; "
        "print('keyring' in sys.modules, 'cryptography' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_replay_window_is_bounded_in_bytes() -> None:
    core: WatchCore[str] = WatchCore("run_1", 0, RetryPolicy(), max_bytes=1000)
    for seq in range(1, 11):
        core.on_event("run_1", seq, f"e{seq}", terminal=False, size=300)
    assert list(core.remembered_sequences) == [8, 9, 10]  # 900 bytes fit, a fourth would not
    assert core.on_event("run_1", 10, "e10", terminal=False, size=300).name == "DROP"
    with pytest.raises(colossus.ProtocolViolationError):
        core.on_event("run_1", 7, "e7", terminal=False, size=300)
    huge: WatchCore[str] = WatchCore("run_1", 0, RetryPolicy())
    huge.on_event("run_1", 1, "big", terminal=False, size=REPLAY_WINDOW_BYTES * 2)
    assert list(huge.remembered_sequences) == [1]  # the newest event always stays comparable


def test_reconnect_budget_has_an_elapsed_limit() -> None:
    policy = RetryPolicy(max_attempts=100, initial_backoff=1.0, max_backoff=1.0, max_elapsed=10.0)
    core: WatchCore[str] = WatchCore("run_1", 0, policy)
    resumes = []
    now = 1000.0
    while (resume := core.on_retryable_failure(now)) is not None:
        resumes.append(resume)
        now += resume.delay + 1.0  # one second spent reconnecting each time
    assert 4 <= len(resumes) < 100
    assert all(r.ready_timeout is not None and r.ready_timeout >= 0 for r in resumes)
    core.on_event("run_1", 1, "e1", terminal=False)
    assert core.on_retryable_failure(now) is not None  # progress restarts both budgets


def test_default_policy_outlasts_a_short_restart() -> None:
    """The default watch budget leaves tens of seconds for a worker to come back."""
    policy = colossus.RetryPolicy()
    assert policy.max_elapsed is not None and policy.max_elapsed >= 20
    core: WatchCore[str] = WatchCore("run_1", 0, policy)
    first = core.on_retryable_failure(0.0)
    assert first is not None and first.ready_timeout is not None
    assert first.delay + first.ready_timeout == pytest.approx(policy.max_elapsed)
