"""``dev``: one command to a worker an SDK can connect to, the bearer kept safe (issue 13)."""

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

from conftest import Worker, enroll_direct, expect_error, pb

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
                       "ExpectedCertificateSHA256:", "NewInMemoryCredentialProvider(bearer)"):
            assert needle in dev.banner, needle
        assert descriptor["instance_id"] in dev.banner.split("--- Go")[1]
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
        expect_error(lambda: _info(again.client(first_bearer)),
                     grpc.StatusCode.UNAUTHENTICATED, "CREDENTIAL_REVOKED")
        assert _info(again.client(again.bearer)).instance_id == dev.field("instance ID")
    finally:
        again.stop()
    creds = cli_json("credentials", "list", "--public-api-dir", str(root / "pub"))
    assert sorted(c["state"] for c in creds) == ["active", "revoked"]


def _keyring_env(root: Path, backend: str) -> dict[str, str]:
    return {**os.environ, "PYTHON_KEYRING_BACKEND": backend,
            "TEST_KEYRING_FILE": str(root / "ring.json"),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}


def test_dev_keeps_the_bearer_in_the_keyring_and_reuses_it(root):
    env = _keyring_env(root, "test_keyring_backend.FileKeyring")
    dev = Dev(root, env=env)
    try:
        ring = json.loads((root / "ring.json").read_text())
        bearer = ring["colossus/dev-app"]
        assert 'OS keyring, service "colossus", account "dev-app"' in dev.banner
        assert 'colossus.KeyringCredentialProvider("colossus", "dev-app")' in dev.banner
        assert "Account: \"dev-app\"" in dev.banner
        assert _info(dev.client(bearer)).instance_id == dev.field("instance ID")
        credential = dev.field("application")
    finally:
        err = dev.stop()
    assert bearer not in dev.banner + err
    again = Dev(root, env=env)
    try:
        assert again.field("application") == credential  # the same credential, reused
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
    dev = Dev(root, env=env)
    try:
        bearer = json.loads((root / "ring.json").read_text())["colossus/dev-app"]
        assert bearer != other_bearer
        assert other_credential not in dev.field("application")
        assert dev.field("application").startswith("dev-app ")
        assert _info(dev.client(bearer)).instance_id == dev.field("instance ID")
    finally:
        dev.stop()


def test_dev_without_a_keyring_leaves_the_credential_pending(root):
    dev = Dev(root, env=_keyring_env(root, "keyring.backends.fail.Keyring"))
    err = dev.stop()
    assert dev.proc.returncode == 5
    assert "stays pending" in err and "--bearer-fd" in err
    assert not (root / "pub" / "endpoint.json").exists()
    (cred,) = cli_json("credentials", "list", "--public-api-dir", str(root / "pub"))
    assert cred["state"] == "pending"


def test_dev_prints_the_bearer_only_when_asked_insecurely(root):
    dev = Dev(root, "--print-bearer-insecurely", "--json")
    try:
        data = json.loads(dev.banner)
        assert data["bearer"] == "printed below (insecure)"
        bearer = data["bearer_value"]
        assert _info(dev.client(bearer)).instance_id == data["instance_id"]
        assert data["public_api_dir"] == str(root / "pub")
    finally:
        err = dev.stop()
    assert "warning" in err and "--print-bearer-insecurely" in err


def test_dev_refuses_two_bearer_destinations(root):
    out = subprocess.run([*CLI, "dev", "--public-api-dir", str(root / "pub"), "--bearer-fd", "1",
                          "--print-bearer-insecurely"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
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
