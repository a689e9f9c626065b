"""``dev``: one command to a worker an SDK can connect to, the bearer kept safe (issues 13, 27).

Issue 27: ``dev`` needs no OS keyring (the bearer goes to an owner-only file in the private
dev folder), and a restart keeps the enrolled credential, so a client held across it carries
on; ``dev`` never revokes a bearer someone may still hold.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cli_helpers import CLI, cli_json

from conftest import Worker, enroll_direct, pb

HERE = Path(__file__).parent


class Dev:
    """One ``dev`` process; ``banner`` is its standard output up to the ready line."""

    def __init__(self, root: Path, *args: str, env: dict[str, str] | None = None,
                 bearer_pipe: bool = False) -> None:
        self.root = root
        self.bearer: str | None = None
        read_fd = write_fd = -1
        extra: list[str] = []
        if bearer_pipe:
            read_fd, write_fd = os.pipe()
            extra = ["--bearer-fd", str(write_fd)]
        self.proc = subprocess.Popen(
            [*CLI, "dev", "--public-api-dir", str(root / "pub"), *extra, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True, env=env, pass_fds=(write_fd,) if bearer_pipe else ())
        if bearer_pipe:
            os.close(write_fd)
            with os.fdopen(read_fd) as pipe:
                self.bearer = pipe.read().strip() or None
        assert self.proc.stdout is not None
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            if line.startswith(("Stop with Ctrl-C", "{")):
                break
        self.banner = "".join(lines)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=20)
        return err

    def field(self, name: str) -> str:
        for line in self.banner.splitlines():
            if line.strip().startswith(name):
                return line.strip()[len(name):].strip()
        raise AssertionError(f"{name} not in {self.banner}")

    def client(self, bearer: str) -> Any:
        worker = Worker(self.root)
        worker.bearers["b"] = bearer
        return worker.client("b")


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    tmp_path.chmod(0o700)
    yield tmp_path


def _info(client: Any) -> Any:
    return client.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=client.md,
                                       timeout=10).server_info


def test_dev_with_a_pipe_prints_what_each_sdk_needs(root):
    dev = Dev(root, bearer_pipe=True)
    try:
        assert dev.bearer and dev.bearer.startswith("cb1_")
        descriptor = json.loads((root / "pub" / "endpoint.json").read_text())
        assert dev.field("instance ID") == descriptor["instance_id"]
        assert dev.field("certificate SHA-256") == descriptor["certificate_sha256"]
        assert dev.field("public API folder") == str(root / "pub")
        for needle in ("colossus.DaemonOptions(", "expected_certificate_sha256=",
                       "Client.connect({", "expectedInstanceId:", 'from "colossus-sdk"',
                       "colossus.Connect(ctx, colossus.DaemonOptions{",
                       "ExpectedCertificateSHA256:", 'getpass.getpass("bearer: ")',
                       "os.Stdin", "package main",
                       "Client::connect(", "DaemonOptions::builder()", "std::io::stdin()"):
            assert needle in dev.banner, needle
        assert descriptor["instance_id"] in dev.banner.split("--- Go")[1]
        assert descriptor["certificate_sha256"] in dev.banner.split("--- Rust")[1]
        # Every SDK, each heading naming what installs it today (nothing is on a registry
        # yet): the release's artifact, never a registry name that is not published.
        headings = [line for line in dev.banner.splitlines() if line.startswith("--- ")]
        assert [h.split()[1] for h in headings] == ["Python", "TypeScript", "Go", "Rust"], headings
        for heading, artifact in zip(headings, ("dist/python/", "dist/npm/", "dist/go", "dist/rust/"),
                                     strict=True):
            assert artifact in heading, heading
        assert "pip install colossus-agent-client" not in dev.banner
        assert "npm install colossus-sdk" not in dev.banner
        client = dev.client(dev.bearer)
        info = _info(client)
        assert info.instance_id == descriptor["instance_id"]
        run = client.create("k", "colossus-script v1\nsay hi\ntool shell.run").run
        assert run.run_id
    finally:
        err = dev.stop()
    assert dev.bearer not in dev.banner + err
    assert "serving https://" in err  # INFO is the default level of dev
    first_bearer = dev.bearer

    again = Dev(root, bearer_pipe=True)
    try:
        assert again.bearer and again.bearer != first_bearer
        # A client may still hold the first bearer (issue 27): dev never revokes it.
        assert _info(again.client(first_bearer)).instance_id == dev.field("instance ID")
        assert _info(again.client(again.bearer)).instance_id == dev.field("instance ID")
    finally:
        again.stop()
    creds = cli_json("credentials", "list", "--public-api-dir", str(root / "pub"))
    assert sorted(c["state"] for c in creds) == ["active", "active"]


def _keyring_env(root: Path, backend: str) -> dict[str, str]:
    return {**os.environ, "PYTHON_KEYRING_BACKEND": backend,
            "TEST_KEYRING_FILE": str(root / "ring.json"),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}


def test_dev_keeps_the_bearer_in_the_keyring_and_reuses_it(root):
    env = _keyring_env(root, "test_keyring_backend.FileKeyring")
    dev = Dev(root, "--keyring", env=env)
    try:
        ring = json.loads((root / "ring.json").read_text())
        bearer = ring["colossus/dev-app"]
        assert 'OS keyring, service "colossus", account "dev-app"' in dev.banner
        assert not (root / "pub" / "dev-app.bearer").exists()
        assert 'colossus.KeyringCredentialProvider("colossus", "dev-app")' in dev.banner
        assert "Account: \"dev-app\"" in dev.banner
        assert _info(dev.client(bearer)).instance_id == dev.field("instance ID")
        credential = dev.field("application")
    finally:
        err = dev.stop()
    assert bearer not in dev.banner + err
    again = Dev(root, "--keyring", env=env)
    try:
        # The same credential, reused.
        assert again.field("application") == credential.replace(", new,", ", reused,")
        assert json.loads((root / "ring.json").read_text())["colossus/dev-app"] == bearer
        assert _info(again.client(bearer))
    finally:
        again.stop()


def test_dev_never_reuses_a_stored_bearer_of_another_application(root):
    """A keyring entry under the dev account that authenticates as someone else is replaced."""
    env = _keyring_env(root, "test_keyring_backend.FileKeyring")
    (root / "pub").mkdir(mode=0o700)
    other_credential, other_bearer = enroll_direct(root / "pub" / "state", "other-app")
    (root / "ring.json").write_text(json.dumps({"colossus/dev-app": other_bearer}))
    dev = Dev(root, "--keyring", env=env)
    try:
        bearer = json.loads((root / "ring.json").read_text())["colossus/dev-app"]
        assert bearer != other_bearer
        assert other_credential not in dev.field("application")
        assert dev.field("application").startswith("dev-app ")
        assert _info(dev.client(bearer)).instance_id == dev.field("instance ID")
    finally:
        dev.stop()


def test_dev_with_keyring_but_no_backend_leaves_the_credential_pending(root):
    dev = Dev(root, "--keyring", env=_keyring_env(root, "keyring.backends.fail.Keyring"))
    err = dev.stop()
    assert dev.proc.returncode == 5
    assert "stays pending" in err and "leave out --keyring" in err
    assert not (root / "pub" / "endpoint.json").exists()
    (cred,) = cli_json("credentials", "list", "--public-api-dir", str(root / "pub"))
    assert cred["state"] == "pending"


def test_dev_prints_the_bearer_only_when_asked_insecurely(root):
    dev = Dev(root, "--print-bearer-insecurely", "--json")
    try:
        data = json.loads(dev.banner)
        assert data["bearer"]["delivery"] == "stdout"
        bearer = data["bearer"]["value"]
        assert _info(dev.client(bearer)).instance_id == data["instance_id"]
        assert data["public_api_dir"] == str(root / "pub")
        assert not (root / "pub" / "dev-app.bearer").exists()
    finally:
        err = dev.stop()
    assert "warning" in err and "--print-bearer-insecurely" in err


@pytest.mark.parametrize("flags", [("--bearer-fd", "1", "--print-bearer-insecurely"),
                                   ("--keyring", "--print-bearer-insecurely"),
                                   ("--keyring-service", "x", "--bearer-fd", "0")])
def test_dev_refuses_two_bearer_destinations(root, flags):
    stdin_pipe, other_end = os.pipe()  # --bearer-fd 0 must pass its own check first
    try:
        out = subprocess.run([*CLI, "dev", "--public-api-dir", str(root / "pub"), *flags],
                             capture_output=True, text=True, timeout=30, stdin=stdin_pipe)
    finally:
        os.close(stdin_pipe)
        os.close(other_end)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "exclude each other" in out.stderr
    assert not (root / "pub").exists()


def test_dev_default_folder_is_private(root):
    env = {**_keyring_env(root, "keyring.backends.fail.Keyring"),
           "XDG_STATE_HOME": str(root / "xdg")}
    dev = subprocess.Popen([*CLI, "dev", "--print-bearer-insecurely", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert dev.stdout is not None
        data = json.loads(dev.stdout.readline())
    finally:
        dev.send_signal(signal.SIGTERM)
        dev.communicate(timeout=20)
    folder = root / "xdg" / "colossus-reference-worker" / "dev"
    assert data["public_api_dir"] == str(folder)
    assert (folder.stat().st_mode & 0o777, (folder / "state").stat().st_mode & 0o777) == \
        (0o700, 0o700)


NO_KEYRING = "keyring.backends.fail.Keyring"


def _walk_strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk_strings(item)
    elif isinstance(value, str):
        yield value


def test_dev_needs_no_keyring_and_keeps_the_bearer_in_an_owner_only_file(root):
    """Issue 27: on a machine without an OS keyring ``dev`` just works (it exited 5)."""
    dev = Dev(root, env=_keyring_env(root, NO_KEYRING))
    try:
        path = root / "pub" / "dev-app.bearer"
        assert f"in the file {path} (mode 0600" in dev.banner
        assert (path.stat().st_mode & 0o777, (root / "pub").stat().st_mode & 0o777) == \
            (0o600, 0o700)
        bearer = path.read_text().strip()
        assert bearer.startswith("cb1_") and path.read_text() == bearer + "\n"
        assert _info(dev.client(bearer)).instance_id == dev.field("instance ID")
        # The snippets read the file; none carries the bearer itself.
        assert dev.banner.count(f'"{path}"') == 4  # one per SDK snippet
    finally:
        err = dev.stop()
    assert dev.proc.returncode == 0, err
    assert bearer not in dev.banner + err


def test_dev_json_is_plain_facts(root):
    """``dev --json`` holds facts only: no prose standing in for a value (issue 27)."""
    dev = Dev(root, "--json", env=_keyring_env(root, NO_KEYRING))
    try:
        data = json.loads(dev.banner)
        descriptor = json.loads((root / "pub" / "endpoint.json").read_text())
    finally:
        dev.stop()
    path = str(root / "pub" / "dev-app.bearer")
    assert data["bearer"] == {"delivery": "file", "path": path}
    assert data["credential_reused"] is False
    assert data["endpoint"] == descriptor["endpoint"]
    assert data["instance_id"] == descriptor["instance_id"]
    assert data["certificate_sha256"] == descriptor["certificate_sha256"]
    assert data["credential_id"].startswith("cred_")
    for text in _walk_strings(data):
        assert " " not in text and "..." not in text, text


def test_a_client_held_across_a_dev_restart_carries_on(root):
    """Issue 27: a restart of ``dev`` used to revoke the bearer, so a held client's watch
    ended in CREDENTIAL_REVOKED. Now the same credential is reused and the same channel,
    with the same bearer, creates, reads and watches after the restart."""
    env = _keyring_env(root, NO_KEYRING)
    dev = Dev(root, "--json", env=env)
    data = json.loads(dev.banner)
    bearer = (root / "pub" / "dev-app.bearer").read_text().strip()
    client = dev.client(bearer)
    try:
        run = client.create("before", "colossus-script v1\nsay one\nsleep 1500\nsay two").run
        stream = client.runs.WatchRun(pb.rs.WatchRunRequest(run_id=run.run_id),
                                      metadata=client.md, timeout=30)
        first = next(stream).event  # the watch is live when dev stops
    finally:
        dev.stop()
    with pytest.raises(grpc.RpcError):
        list(stream)
    again = Dev(root, "--json", env=env)
    try:
        after = json.loads(again.banner)
        assert after["credential_id"] == data["credential_id"]
        assert after["credential_reused"] is True
        assert (root / "pub" / "dev-app.bearer").read_text().strip() == bearer
        # The channel opened before the restart reconnects to the same port.
        info = client.system.GetServerInfo(pb.sys.GetServerInfoRequest(), metadata=client.md,
                                           timeout=30, wait_for_ready=True).server_info
        assert info.instance_id == data["instance_id"]
        # Resumed where it broke off, as every SDK's watch does after a reconnect.
        events = client.watch(run.run_id, after=first.sequence, timeout=30)
        assert events[0].sequence == first.sequence + 1
        assert events[-1].HasField("terminated"), events[-1]
        assert client.create("after", "colossus-script v1\nsay three").run.run_id
    finally:
        again.stop()
    creds = cli_json("credentials", "list", "--public-api-dir", str(root / "pub"))
    assert [c["state"] for c in creds] == ["active"]
